// Security and quotas: ACLs, SCRAM users, client quotas; each panel loads (and fails) on its own.
"use strict";

(() => {
  const { h, api, panel, table, form, fmt } = Console;

  Console.pages.security = (main) => {
    main.append(h("h1", {}, "Security & quotas"));
    const acls = panel(main, "ACLs", () => api("/api/acls"), (body, d) => {
      body.append(d.acls.length ? table([
        { title: "Resource", render: (a) => a.resource_type + ":" + a.name },
        { title: "Pattern", key: "pattern_type" }, { title: "Principal", key: "principal" }, { title: "Host", key: "host" },
        { title: "Operation", key: "operation" }, { title: "Permission", key: "permission" },
        { title: "", render: (a) => h("button", { class: "secondary", onclick: async () => {
            try { await api("/api/acls/delete", { method: "POST", json: a }); acls.refresh(); } catch (e) { alert(e.message); }
          } }, "Remove") },
      ], d.acls, (a) => ({ "data-acl": a.principal + " " + a.operation + " " + a.resource_type + ":" + a.name }))
        : h("p", { class: "muted" }, "No ACLs."));
    }, { id: "acls" });
    panel(main, "Add an ACL", async () => ({}), (body) => {
      const f = form([
        { name: "resource_type", label: "Resource", options: ["Topic", "Group", "Cluster", "TransactionalId"] },
        { name: "name", label: "Name", size: 16 },
        { name: "pattern_type", label: "Pattern", options: ["Literal", "Prefixed"] },
        { name: "principal", label: "Principal", value: "User:", size: 16 }, { name: "host", label: "Host", value: "*", size: 8 },
        { name: "operation", label: "Operation", options: ["Read", "Write", "Create", "Delete", "Alter", "Describe",
          "ClusterAction", "DescribeConfigs", "AlterConfigs", "IdempotentWrite", "All"] },
        { name: "permission", label: "Permission", options: ["Allow", "Deny"] },
      ], async (v) => { await api("/api/acls", { method: "POST", json: v }); acls.refresh(); return "added"; }, "Add ACL");
      f.dataset.form = "acl";
      body.append(f);
    }, { id: "add-acl" });

    const users = panel(main, "SCRAM users", () => api("/api/scram-users"), (body, d) => {
      body.append(d.users.length ? table([
        { title: "User", key: "user" },
        { title: "Credentials", render: (u) => u.error || u.credentials.map((c) => c.mechanism + " (" + c.iterations + " iterations)").join(", ") },
        { title: "", render: (u) => u.credentials.map((c) => h("button", { class: "secondary", onclick: async () => {
            try { await api("/api/scram-users/" + encodeURIComponent(u.user) + "?mechanism=" + c.mechanism, { method: "DELETE" });
                  users.refresh(); } catch (e) { alert(e.message); }
          } }, "Remove " + c.mechanism)) },
      ], d.users) : h("p", { class: "muted" }, "No SCRAM users."));
      body.append(form([
        { name: "user", label: "User", size: 14 }, { name: "mechanism", label: "Mechanism", options: ["SCRAM-SHA-256", "SCRAM-SHA-512"] },
        { name: "password", label: "Password", type: "password", size: 14 },
        { name: "iterations", label: "Iterations", value: "4096", size: 6 },
      ], async (v) => { await api("/api/scram-users", { method: "POST", json: v }); users.refresh(); return "saved"; },
      "Set credential"));
    }, { id: "scram" });

    const quotas = panel(main, "Client quotas", () => api("/api/quotas"), (body, d) => {
      body.append(d.quotas.length ? table([
        { title: "Entity", render: (q) => Object.entries(q.entity).map(([k, v]) => k + "=" + (v === null ? "<default>" : v)).join(", ") },
        { title: "Quotas", render: (q) => Object.entries(q.values).map(([k, v]) => k + "=" + fmt(v)).join(", ") },
      ], d.quotas) : h("p", { class: "muted" }, "No client quotas."));
      body.append(form([
        { name: "type", label: "Entity type", options: ["user", "client-id", "ip"] },
        { name: "name", label: "Name (empty: default)", size: 14 },
        { name: "key", label: "Quota", options: ["producer_byte_rate", "consumer_byte_rate", "request_percentage",
                                                 "connection_creation_rate"] },
        { name: "value", label: "Value (empty: remove)", size: 10 },
      ], async (v) => {
        const change = { entity: { [v.type]: v.name || null } };
        if (v.value === "") change.remove = [v.key]; else change.set = { [v.key]: Number(v.value) };
        await api("/api/quotas", { method: "POST", json: change });
        quotas.refresh();
        return "saved";
      }, "Set quota"));
    }, { id: "quotas" });
  };
})();
