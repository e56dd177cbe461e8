// Consumer groups: the list; per group members, assignments, lag per partition with its plot, reset and delete.
"use strict";

(() => {
  const { h, api, panel, table, form, fmt } = Console;
  const enc = encodeURIComponent;

  function stateBadge(state) {
    const cls = state === "Stable" ? "good" : state === "Empty" || state === "Dead" ? "" : "warn";
    return h("span", { class: "badge " + cls, "data-state": state }, state || "–");
  }

  function groupList(main) {
    main.append(h("h1", {}, "Consumer groups"));
    panel(main, "Groups", () => api("/api/groups"), (body, d) => {
      body.append(d.groups.length ? table([
        { title: "Group", render: (g) => h("a", { href: "#/groups/" + enc(g.group_id) }, g.group_id) },
        { title: "State", render: (g) => stateBadge(g.state) },
        { title: "Protocol", render: (g) => (g.protocol_type || "–") + (g.assignor ? " / " + g.assignor : "") },
        { title: "Members", key: "members", num: true },
        { title: "Coordinator", key: "coordinator", num: true },
        { title: "Total lag", key: "lag", num: true },
      ], d.groups, (g) => ({ "data-group": g.group_id })) : h("p", { class: "muted" }, "No consumer groups."));
    }, { id: "groups", every: 5000 });
  }

  function groupDetail(main, id) {
    main.append(h("h1", {}, "Group ", id));
    const detail = panel(main, "State and members", () => api("/api/groups/" + enc(id)), (body, d) => {
      body.append(h("div", { class: "stats" },
        h("div", { class: "stat" }, h("div", { class: "v" }, stateBadge(d.state)), h("div", { class: "k" }, "state")),
        h("div", { class: "stat" }, h("div", { class: "v" }, fmt(d.members.length)), h("div", { class: "k" }, "members")),
        h("div", { class: "stat" }, h("div", { class: "v", "data-total-lag": d.lag ? d.lag.total : "" },
          fmt(d.lag ? d.lag.total : null)), h("div", { class: "k" }, "total lag")),
        h("div", { class: "stat" }, h("div", { class: "v" }, fmt(d.coordinator)), h("div", { class: "k" }, "coordinator"))));
      body.append(h("p", { class: "note" }, "Protocol " + (d.protocol_type || "–") + (d.assignor ? ", assignor " + d.assignor : "")));
      body.append(d.members.length ? table([
        { title: "Member", key: "member_id" }, { title: "Client", key: "client_id" }, { title: "Host", key: "host" },
        { title: "Instance", key: "group_instance_id" },
        { title: "Assignment", render: (m) => m.assignment.map(([t, p]) => t + "-" + p).join(", ") },
      ], d.members) : h("p", { class: "muted" }, "No members."));
      if (d.lag_error) body.append(h("div", { class: "error" }, "lag: " + d.lag_error));
      else body.append(table([
        { title: "Topic", key: "topic" }, { title: "Partition", key: "partition", num: true },
        { title: "Committed", key: "committed", num: true }, { title: "Log end", key: "end", num: true },
        { title: "Lag", key: "lag", num: true },
      ], d.lag.partitions, (p) => ({ "data-lag-partition": p.topic + "-" + p.partition })));
      Plot.line(body, "Total lag", [{ name: id, points: d.lag_history }], { unit: "count", id: "lag" });
    }, { id: "group", every: 2000 });

    panel(main, "Reset offsets", async () => ({}), (body) => {
      body.append(h("p", { class: "note" }, "Only while the group has no members (Empty), as kafka-consumer-groups " +
        "--reset-offsets. Value: an offset, or a timestamp in ms or ISO form."));
      body.append(form([
        { name: "to", label: "To", options: ["earliest", "latest", "offset", "timestamp"] },
        { name: "value", label: "Value", size: 20 }, { name: "topic", label: "Topic (optional)", size: 16 },
      ], async (v) => {
        let value = v.value;
        if (v.to === "timestamp" && value && isNaN(Number(value))) value = String(Date.parse(value));
        const r = await api("/api/groups/" + enc(id) + "/reset", { method: "POST", json: { to: v.to, value, topic: v.topic } });
        detail.refresh();
        return "reset " + r.offsets.length + " partition(s)";
      }, "Reset"));
      body.querySelector("form").dataset.form = "reset";
      body.append(h("button", { class: "danger", "data-action": "delete-group", onclick: async () => {
        if (!confirm("Delete group " + id + "?")) return;
        try { await api("/api/groups/" + enc(id), { method: "DELETE" }); location.hash = "#/groups"; }
        catch (e) { alert(e.message); }
      } }, "Delete group"));
    }, { id: "reset" });
  }

  Console.pages.groups = (main, args) => args.length ? groupDetail(main, args[0]) : groupList(main);
})();
