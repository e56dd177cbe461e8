// Messages: browse from an offset, a timestamp, the start or the end; the server-side filter; produce.
"use strict";

(() => {
  const { h, api, panel, table, form, fmt } = Console;
  const enc = encodeURIComponent;
  const decoder = new TextDecoder("utf-8");

  function bytesOf(b64) {
    const raw = atob(b64);
    const out = new Uint8Array(raw.length);
    for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
    return out;
  }

  // One key, value or header value as text, pretty JSON or hex.
  function show(field, format) {
    if (field === null || field === undefined) return h("span", { class: "muted" }, "null");
    const data = bytesOf(field.b64);
    let text;
    if (format === "hex") {
      text = Array.from(data, (b) => b.toString(16).padStart(2, "0")).join(" ");
    } else {
      text = decoder.decode(data);
      if (format === "json") {
        try { text = JSON.stringify(JSON.parse(text), null, 2); } catch (e) { text = text + "  (not JSON)"; }
      }
    }
    if (field.truncated) text += "\n… (" + field.size.toLocaleString("en-US") + " bytes in all)";
    return h("pre", { class: "value" }, text);
  }

  function recordRows(rows, format, withTxn) {
    const cols = [
      { title: "Partition", key: "partition", num: true }, { title: "Offset", key: "offset", num: true },
      { title: "Timestamp", render: (r) => Console.time(r.timestamp) },
      { title: "Key", render: (r) => r.type === "marker" ? "" : show(r.key, format) },
      { title: "Value", render: (r) => r.type === "marker"
          ? h("span", {}, "transaction marker: " + r.marker + " (producer " + r.producer_id + ")")
          : show(r.value, format) },
      { title: "Headers", render: (r) => (r.headers || []).map(([k, v]) => h("div", {}, h("b", {}, k + ": "), show(v, format))) },
    ];
    if (withTxn) cols.push({ title: "Transaction", render: (r) => r.type === "marker" ? r.marker.toLowerCase()
      : r.transaction ? h("span", { class: "badge" + (r.transaction === "aborted" ? " bad" : "") }, r.transaction) : "" });
    return table(cols, rows, (r) => ({ class: r.type === "marker" ? "marker" : r.transaction === "aborted" ? "aborted" : "",
                                       "data-offset": r.offset, "data-partition": r.partition, "data-row": r.type }));
  }

  function messagesOf(main, topic) {
    main.append(h("h1", {}, "Messages of ", h("a", { href: "#/topics/" + enc(topic) }, topic)));
    let format = "text";

    panel(main, "Browse", async () => api("/api/topics/" + enc(topic)), (body, d) => {
      const results = h("div", { "data-results": "browse" });
      const partitions = ["all"].concat(d.partitions.map((p) => String(p.partition)));
      const f = form([
        { name: "partition", label: "Partition", options: partitions },
        { name: "from", label: "From", options: ["start", "end", "offset", "timestamp"] },
        { name: "value", label: "Offset / timestamp (ms or ISO)", size: 22 },
        { name: "limit", label: "Limit", value: "100", size: 5 },
        { name: "isolation", label: "Isolation", options: ["read_uncommitted", "read_committed"] },
        { name: "format", label: "Show as", options: ["text", "json", "hex"] },
      ], async (v) => {
        format = v.format;
        let value = v.value;
        if (v.from === "timestamp" && value && isNaN(Number(value))) value = String(Date.parse(value));
        const q = new URLSearchParams({ partition: v.partition, from: v.from, value, limit: v.limit,
                                        isolation: v.isolation });
        const started = performance.now();
        const r = await api("/api/topics/" + enc(topic) + "/messages?" + q);
        results.replaceChildren(recordRows(r.rows, format, true));
        return r.rows.length + " rows in " + Math.round(performance.now() - started) + " ms";
      }, "Load");
      f.dataset.form = "browse";
      body.append(f, results);
      f.requestSubmit();
    }, { id: "browse" });

    panel(main, "Filter (evaluated on the server over a bounded range)", async () => api("/api/topics/" + enc(topic)),
      (body, d) => {
      const bar = h("div", {});
      const progress = h("div", { class: "progress" }, bar);
      const status = h("div", { class: "note", "data-search-status": "1" });
      const results = h("div", { "data-results": "search" });
      let polling = null, searchId = null, matches = [], busy = false;
      const cancel = h("button", { type: "button", class: "secondary", onclick: async () => {
        if (searchId) await api("/api/searches/" + searchId, { method: "DELETE" }).catch(() => {});
      } }, "Cancel");
      const f = form([
        { name: "pattern", label: "Pattern", size: 24 },
        { name: "field", label: "In", options: ["any", "key", "value", "header"] },
        { name: "regex", label: "regex", type: "checkbox" }, { name: "ignore_case", label: "ignore case", type: "checkbox" },
        { name: "partition", label: "Partition", options: ["all"].concat(d.partitions.map((p) => String(p.partition))) },
        { name: "from", label: "From", options: ["start", "end", "offset", "timestamp"] },
        { name: "value", label: "Offset / timestamp", size: 12 },
        { name: "max_records", label: "Scan at most", value: "1000000", size: 9 },
        { name: "isolation", label: "Isolation", options: ["read_uncommitted", "read_committed"] },
      ], async (v) => {
        if (polling) clearInterval(polling);
        matches = [];
        results.replaceChildren();
        const job = await api("/api/topics/" + enc(topic) + "/search", { method: "POST", json: v });
        searchId = job.id;
        const generation = Console.current();
        const poll = async () => {
          if (generation !== Console.current() || searchId !== job.id) { clearInterval(polling); return; }
          if (busy) return;  // one poll at a time: each asks for the matches after those it has
          busy = true;
          let p;
          try { p = await api("/api/searches/" + job.id + "?after=" + matches.length); } finally { busy = false; }
          matches = matches.concat(p.matches);
          bar.style.width = (p.total ? Math.min(100, 100 * p.scanned / p.total) : 100) + "%";
          status.textContent = p.state + ": scanned " + fmt(p.scanned) + " of " + fmt(p.total) + " records, " +
            fmt(matches.length) + " matches" + (p.records_per_s ? ", " + fmt(p.records_per_s) + " records/s" : "") +
            (p.error ? " — " + p.error : "");
          status.dataset.state = p.state;
          if (p.matches.length) results.replaceChildren(recordRows(matches.map((m) => Object.assign({ type: "record" }, m)),
                                                                 format, false));
          if (p.state !== "running") clearInterval(polling);
        };
        polling = setInterval(poll, 300);
        await poll();
        return "started";
      }, "Search");
      f.dataset.form = "search";
      f.append(cancel);
      body.append(f, progress, status, results);
    }, { id: "search" });

    panel(main, "Produce a record", async () => api("/api/topics/" + enc(topic)), (body, d) => {
      const f = form([
        { name: "partition", label: "Partition", options: ["any"].concat(d.partitions.map((p) => String(p.partition))) },
        { name: "key", label: "Key (empty: null)", size: 16 },
        { name: "value", label: "Value", type: "textarea" },
        { name: "headers", label: "Headers (k=v per line)", type: "textarea" },
      ], async (v) => {
        const headers = v.headers.split("\n").filter((l) => l.trim()).map((l) => {
          const i = l.indexOf("=");
          return i < 0 ? [l.trim(), null] : [l.slice(0, i).trim(), l.slice(i + 1)];
        });
        const r = await api("/api/topics/" + enc(topic) + "/messages", { method: "POST", json: {
          key: v.key === "" ? null : v.key, value: v.value, headers,
          partition: v.partition === "any" ? null : v.partition } });
        return "written to partition " + r.partition + " at offset " + r.offset;
      }, "Produce");
      f.dataset.form = "produce";
      body.append(f);
    }, { id: "produce" });
  }

  function chooseTopic(main) {
    main.append(h("h1", {}, "Messages"));
    panel(main, "Choose a topic", () => api("/api/topics"), (body, d) => {
      body.append(h("ul", {}, d.topics.filter((t) => !t.internal).slice(0, 500).map((t) =>
        h("li", {}, h("a", { href: "#/messages/" + enc(t.name) }, t.name), " ",
          h("span", { class: "muted" }, fmt(t.messages) + " messages")))));
    }, { id: "choose-topic" });
  }

  Console.pages.messages = (main, args) => args.length ? messagesOf(main, args[0]) : chooseTopic(main);
})();
