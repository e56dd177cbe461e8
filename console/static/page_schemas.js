// Schemas: the schema registry's subjects (console started with --schema-registry URL) and a subject's versions.
"use strict";

(() => {
  const { h, api, panel, table } = Console;
  const enc = encodeURIComponent;

  function pretty(text) {
    try { return JSON.stringify(JSON.parse(text), null, 2); } catch (e) { return text; }  // Protobuf: as is
  }

  function subjectList(main) {
    main.append(h("h1", {}, "Schemas"));
    panel(main, "Subjects", () => api("/api/schemas"), (body, d) => {
      body.append(h("p", { class: "note" }, "Registry " + d.url + ", global compatibility " + (d.compatibility || "–")));
      body.append(d.subjects.length ? table([
        { title: "Subject", render: (s) => h("a", { href: "#/schemas/" + enc(s.subject) }, s.subject) },
        { title: "Type", key: "type" },
        { title: "Versions", key: "versions", num: true },
        { title: "Latest", key: "latest", num: true },
        { title: "Latest id", key: "id", num: true },
      ], d.subjects, (s) => ({ "data-subject": s.subject })) : h("p", { class: "muted" }, "No subject registered."));
    }, { id: "subjects", every: 10000 });
  }

  function subjectDetail(main, subject) {
    main.append(h("h1", {}, h("a", { href: "#/schemas" }, "Schemas"), " / ", subject));
    panel(main, "Versions", () => api("/api/schemas/" + enc(subject)), (body, d) => {
      body.append(h("p", { class: "note" }, "Compatibility " + (d.compatibility || "–")));
      body.append(table([
        { title: "Version", key: "version", num: true },
        { title: "Id", key: "id", num: true },
        { title: "Type", key: "type" },
        { title: "Schema", render: (v) => h("pre", { class: "value" }, pretty(v.schema)) },
        { title: "References", render: (v) => v.references.map((r) => r.subject + " v" + r.version).join(", ") },
      ], d.versions.slice().reverse(), (v) => ({ "data-version": v.version })));
    }, { id: "versions" });
  }

  Console.pages.schemas = (main, args) => args.length ? subjectDetail(main, args[0]) : subjectList(main);
})();
