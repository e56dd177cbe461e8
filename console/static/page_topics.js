// Topics: the searchable list, creation; per topic its partitions, leadership map, configs and operations.
"use strict";

(() => {
  const { h, api, panel, table, form, fmt, bytes } = Console;
  const SHOWN = 500;
  const enc = encodeURIComponent;

  function topicList(main) {
    main.append(h("h1", {}, "Topics"));
    const list = panel(main, "Topics", () => api("/api/topics"), (body, d) => {
      const search = h("input", { type: "search", placeholder: "search topics", "data-search": "topics", size: 30 });
      const holder = h("div", {});
      const showInternal = h("input", { type: "checkbox" });
      function draw() {
        const q = search.value.toLowerCase();
        const rows = d.topics.filter((t) => t.name.toLowerCase().includes(q) && (showInternal.checked || !t.internal));
        holder.replaceChildren(table([
          { title: "Name", render: (t) => h("a", { href: "#/topics/" + enc(t.name) }, t.name) },
          { title: "Partitions", key: "partitions", num: true },
          { title: "RF", key: "replication_factor", num: true },
          { title: "Size", render: (t) => bytes(t.size), num: true },
          { title: "Messages", key: "messages", num: true },
          { title: "Cleanup policy", key: "cleanup_policy" },
          { title: "Health", render: (t) => t.offline ? h("span", { class: "badge bad" }, t.offline + " offline")
            : t.under_replicated ? h("span", { class: "badge warn" }, t.under_replicated + " under-replicated")
            : h("span", { class: "badge good" }, "ok") },
        ], rows.slice(0, SHOWN), (t) => ({ "data-topic": t.name })),
        rows.length > SHOWN ? h("p", { class: "note" }, rows.length - SHOWN + " more: narrow the search") : "");
      }
      search.addEventListener("input", draw);
      showInternal.addEventListener("change", draw);
      body.append(h("div", { class: "controls" }, search, h("label", { class: "check" }, showInternal, "internal topics"),
        h("span", { class: "note" }, d.topics.length + " topics, as of " + d.age_s + " s ago (refreshed in the background)")));
      for (const [what, message] of Object.entries(d.errors || {})) {
        body.append(h("div", { class: "error" }, what + " unavailable: " + message));
      }
      body.append(holder);
      draw();
    }, { id: "topics" });

    const create = panel(main, "Create topic", async () => ({}), (body) => {
      body.append(form([
        { name: "name", label: "Name", size: 24 }, { name: "partitions", label: "Partitions", value: "3", size: 5 },
        { name: "replication_factor", label: "Replication factor", value: "", placeholder: "default", size: 8 },
        { name: "configs", label: "Configs (k=v, comma separated)", size: 30 },
      ], async (v) => {
        const configs = {};
        for (const pair of v.configs.split(",").map((s) => s.trim()).filter(Boolean)) {
          const i = pair.indexOf("=");
          configs[pair.slice(0, i)] = pair.slice(i + 1);
        }
        await api("/api/topics", { method: "POST", json: { name: v.name, partitions: v.partitions,
                                                           replication_factor: v.replication_factor, configs } });
        list.refresh();
        return "created " + v.name;
      }, "Create"));
    }, { id: "create-topic" });
    main.insertBefore(create.box, list.box);
  }

  function topicDetail(main, name) {
    main.append(h("h1", {}, "Topic ", h("span", { "data-topic-name": name }, name), " ",
      h("a", { href: "#/messages/" + enc(name), style: "font-size:14px" }, "messages →")));
    const detail = panel(main, "Partitions", () => api("/api/topics/" + enc(name)), (body, d) => {
      for (const [what, message] of Object.entries(d.errors || {})) {
        body.append(h("div", { class: "error" }, what + " unavailable: " + message));
      }
      body.append(table([
        { title: "Partition", key: "partition", num: true },
        { title: "Leader", render: (p) => p.leader < 0 ? h("span", { class: "badge bad" }, "offline") : p.leader },
        { title: "Replicas", render: (p) => p.replicas.join(", ") },
        { title: "ISR", render: (p) => p.isr.join(", ") },
        { title: "Offline replicas", render: (p) => p.offline_replicas.join(", ") },
        { title: "Log start", key: "start", num: true }, { title: "Log end", key: "end", num: true },
        { title: "Size per log directory", render: (p) => p.log_dirs === null ? "–" : p.log_dirs.map((r) =>
            h("div", {}, "broker " + r.broker + " " + r.dir + ": " + bytes(r.size) + (r.future ? " (future)" : ""))) },
      ], d.partitions, (p) => ({ "data-partition": p.partition, "data-leader": p.leader })));
    }, { id: "partitions", every: 5000 });

    panel(main, "Leadership map (broker × partition)", () => api("/api/topics/" + enc(name)), (body, d) => {
      const brokers = d.brokers.map((b) => b.id);
      body.append(h("p", { class: "note" }, "L leader, R in-sync replica, o out-of-sync replica"));
      body.append(h("table", { class: "map" },
        h("tr", {}, h("th", {}, "broker"), d.partitions.map((p) => h("th", {}, p.partition))),
        brokers.map((b) => h("tr", {}, h("th", {}, b + (d.brokers.find((x) => x.id === b).alive ? "" : " ✕")),
          d.partitions.map((p) => p.leader === b ? h("td", { class: "leader" }, "L")
            : !p.replicas.includes(b) ? h("td", {}, "") : p.isr.includes(b) ? h("td", { class: "isr" }, "R")
            : h("td", { class: "out" }, "o"))))));
    }, { id: "leadership", every: 5000 });

    panel(main, "Operations", async () => ({}), (body) => {
      body.append(form([{ name: "total", label: "Total partitions", size: 6 }], async (v) => {
        await api("/api/topics/" + enc(name) + "/partitions", { method: "POST", json: { total: v.total } });
        detail.refresh();
        return "now " + v.total + " partitions";
      }, "Add partitions"));
      body.append(h("button", { class: "danger", "data-action": "delete-topic", onclick: async () => {
        if (!confirm("Delete topic " + name + "?")) return;
        try {
          await api("/api/topics/" + enc(name), { method: "DELETE" });
          location.hash = "#/topics";
        } catch (e) { alert(e.message); }
      } }, "Delete topic"));
    }, { id: "operations" });

    panel(main, "Configuration", () => api("/api/topics/" + enc(name) + "/configs"), (body, d, refresh) => {
      body.append(h("p", { class: "note" }, "Overrides are DYNAMIC_TOPIC_CONFIG; everything else comes from the " +
        "broker or Kafka's defaults. Empty a value and press Set to go back to the default."));
      body.append(table([
        { title: "Name", render: (c) => c.is_default ? c.name : h("b", {}, c.name) },
        { title: "Value", render: (c) => {
            if (c.read_only) return fmt(c.sensitive ? "(sensitive)" : c.value);
            const input = h("input", { value: c.value === null ? "" : c.value, size: 24, "data-config": c.name });
            const set = h("button", { class: "secondary", onclick: async () => {
              const change = input.value === "" ? { delete: [c.name] } : { set: { [c.name]: input.value } };
              try { await api("/api/topics/" + enc(name) + "/configs", { method: "POST", json: change }); refresh(); }
              catch (e) { alert(e.message); }
            } }, "Set");
            return h("span", {}, input, " ", set);
          } },
        { title: "Source", render: (c) => h("span", { class: "badge" + (c.source === "DYNAMIC_TOPIC_CONFIG" ? " warn" : "") },
                                             c.source) },
        { title: "Synonyms", render: (c) => c.synonyms.map((s) => h("div", { class: "note" },
            s.source + ": " + s.name + "=" + fmt(s.value))) },
      ], d.configs));
    }, { id: "configs" });
  }

  Console.pages.topics = (main, args) => args.length ? topicDetail(main, args[0]) : topicList(main);
})();
