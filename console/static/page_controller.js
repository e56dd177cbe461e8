// Controller: the active controller, the changes the console saw, reassignments, preferred leader election.
"use strict";

(() => {
  const { h, api, panel, table, form, fmt } = Console;

  Console.pages.controller = (main) => {
    main.append(h("h1", {}, "Controller"));
    panel(main, "Controller and recent events", () => api("/api/controller"), (body, d) => {
      body.append(h("div", { class: "stats" },
        h("div", { class: "stat" }, h("div", { class: "v" }, fmt(d.controller_id)), h("div", { class: "k" }, "controller")),
        h("div", { class: "stat" }, h("div", { class: "v" }, fmt(d.controller_epoch)),
          h("div", { class: "k" }, "controller epoch"))));
      if (d.watch_error) body.append(h("div", { class: "error" }, "metadata watch: " + d.watch_error));
      body.append(h("p", { class: "note" }, "Changes seen in the cluster metadata (polled every " + d.watch_interval_s +
        " s since the console started): brokers, controller, topics, leaders, ISR, offline partitions."));
      body.append(d.events.length ? table([
        { title: "Time", render: (e) => Console.time(e.time * 1000) },
        { title: "Kind", render: (e) => h("span", { class: "badge" + (e.kind === "offline" ? " bad" : "") }, e.kind) },
        { title: "Event", key: "text" },
      ], d.events.slice(0, 300), (e) => ({ "data-event": e.kind })) : h("p", { class: "muted" }, "No changes seen yet."));
    }, { id: "events", every: 3000 });

    panel(main, "Reassignments in progress", () => api("/api/reassignments"), (body, d) => {
      body.append(d.reassignments.length ? table([
        { title: "Topic", key: "topic" }, { title: "Partition", key: "partition", num: true },
        { title: "Replicas", render: (r) => r.replicas.join(", ") },
        { title: "Adding", render: (r) => r.adding.join(", ") },
        { title: "Removing", render: (r) => r.removing.join(", ") },
      ], d.reassignments) : h("p", { class: "muted" }, "No reassignment in progress."));
    }, { id: "reassignments", every: 5000 });

    panel(main, "Preferred leader election", async () => ({}), (body) => {
      const out = h("div", {});
      body.append(h("p", { class: "note" }, "Move leadership back to each partition's preferred (first) replica. " +
        "Leave the topic empty for every partition."));
      body.append(form([{ name: "topic", label: "Topic (optional)" }, { name: "partition", label: "Partition", size: 5 }],
        async (v) => {
          const d = await api("/api/elect-leaders", { method: "POST", json: v });
          out.replaceChildren(table([
            { title: "Topic", key: "topic" }, { title: "Partition", key: "partition", num: true },
            { title: "Result", render: (r) => r.error || "elected" }], d.results));
          return d.results.length + " partition(s)";
        }, "Elect"), out);
    }, { id: "election" });
  };
})();
