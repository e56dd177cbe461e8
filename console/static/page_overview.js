// Overview: cluster health, brokers, and live plots from the brokers' Prometheus endpoints.
"use strict";

(() => {
  const { h, api, panel, table, fmt } = Console;
  const PLOTS = [
    ["bytes_in", "Bytes in", "bytes"], ["bytes_out", "Bytes out", "bytes"], ["messages_in", "Messages in", "rate"],
    ["produce_p99_ms", "Produce request p99", "ms"], ["fetch_p99_ms", "Fetch (consumer) request p99", "ms"],
    ["under_replicated", "Under-replicated partitions", "count"],
  ];

  function stat(key, value, bad) {
    return h("div", { class: "stat" + (bad ? " bad" : ""), "data-stat": key },
      h("div", { class: "v" }, fmt(value)), h("div", { class: "k" }, key.replace(/_/g, " ")));
  }

  Console.pages.overview = (main) => {
    main.append(h("h1", {}, "Overview"));
    panel(main, "Cluster", () => api("/api/overview"), (body, d) => {
      body.append(h("div", { class: "stats" },
        stat("controller", d.controller_id), stat("controller_epoch", d.controller_epoch),
        stat("brokers", d.brokers.filter((b) => b.alive).length + " / " + d.brokers.length,
             d.brokers.some((b) => !b.alive)),
        stat("topics", d.topics), stat("partitions", d.partitions),
        stat("under_replicated", d.under_replicated, d.under_replicated > 0),
        stat("under_min_isr", d.under_min_isr, d.under_min_isr > 0),
        stat("offline", d.offline, d.offline > 0)));
      body.append(h("p", { class: "note" }, "Cluster id " + (d.cluster_id || "–")));
      for (const [what, message] of Object.entries(d.errors || {})) {
        body.append(h("div", { class: "error" }, what + ": " + message));
      }
      body.append(table([
        { title: "Broker", key: "id" },
        { title: "Address", render: (b) => b.host + ":" + b.port },
        { title: "Rack", key: "rack" },
        { title: "Controller", render: (b) => b.controller ? h("span", { class: "badge good" }, "controller") : "" },
        { title: "Alive", render: (b) => b.alive ? h("span", { class: "badge good" }, "alive")
                                                 : h("span", { class: "badge bad" }, "offline") },
      ], d.brokers, (b) => ({ "data-broker": b.id })));
    }, { id: "cluster", every: 3000 });

    panel(main, "Live metrics (from the brokers' Prometheus endpoints)", () => api("/api/metrics"), (body, d) => {
      const endpoints = Object.entries(d.brokers);
      if (!endpoints.length) {
        body.append(h("p", { class: "note" },
          "No metrics endpoints: start the console with --metrics host:port,... to see plots."));
        return;
      }
      for (const [endpoint, b] of endpoints) {
        if (b.error) body.append(h("div", { class: "error" }, "metrics of " + endpoint + ": " + b.error));
      }
      const grid = h("div", { class: "grid" });
      body.append(grid);
      for (const [key, title, unit] of PLOTS) {
        const series = endpoints.map(([endpoint, b]) => ({
          name: b.broker === null ? endpoint : "broker " + b.broker, points: b.points.filter((p) => key in p[1]).map((p) => [p[0], p[1][key]]) }));
        Plot.line(grid, title, series, { unit, id: key });
      }
    }, { id: "metrics", every: 5000 });
  };
})();
