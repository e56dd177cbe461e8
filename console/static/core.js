// The console's core: element builder, JSON calls, panels that show their own error, the router.
"use strict";

const Console = (() => {
  const pages = {};
  let timers = [];
  let generation = 0;

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
      else if (k === "class") el.className = v;
      else if (k === "value") el.value = v;
      else el.setAttribute(k, v === true ? "" : v);
    }
    for (const c of children.flat(Infinity)) {
      if (c === null || c === undefined || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }

  async function api(path, options) {
    const opts = Object.assign({}, options || {});
    if (opts.json !== undefined) {
      opts.body = JSON.stringify(opts.json);
      opts.headers = { "Content-Type": "application/json" };
      delete opts.json;
    }
    let response;
    try {
      response = await fetch(path, opts);
    } catch (e) {
      throw new Error("the console did not answer: " + e.message);
    }
    let data = null;
    try { data = await response.json(); } catch (e) { /* not JSON */ }
    if (!response.ok) throw new Error((data && data.error) || ("HTTP " + response.status));
    return data;
  }

  // A titled box that loads its data and renders it; a failure shows in this box only.
  function panel(parent, title, load, render, opts) {
    opts = opts || {};
    const body = h("div", { class: "body" }, h("span", { class: "muted" }, "loading…"));
    const tools = h("span", {});
    const box = h("section", { class: "panel", "data-panel": opts.id || title }, h("h2", {}, title, tools), body);
    parent.append(box);
    const mine = generation;
    let last = null;
    async function refresh() {
      if (mine !== generation) return;
      try {
        const data = await load();
        if (mine !== generation) return;
        last = data;
        body.replaceChildren();
        render(body, data, refresh);
      } catch (e) {
        if (mine !== generation) return;
        body.replaceChildren(h("div", { class: "error", "data-error": "1" }, e.message));
      }
    }
    refresh();
    if (opts.every) every(refresh, opts.every);
    return { box, body, tools, refresh, data: () => last };
  }

  function every(fn, ms) {
    timers.push(setInterval(fn, ms));
  }

  function form(fields, submit, label) {
    const inputs = {};
    const status = h("span", { class: "note" });
    const el = h("form", { class: "inline", onsubmit: async (ev) => {
      ev.preventDefault();
      status.textContent = "…";
      status.className = "note";
      const values = {};
      for (const [name, input] of Object.entries(inputs)) {
        values[name] = input.type === "checkbox" ? input.checked : input.value;
      }
      try {
        const msg = await submit(values);
        status.textContent = msg || "done";
        status.className = "note ok";
      } catch (e) {
        status.textContent = e.message;
        status.className = "note error-text";
        status.style.color = "var(--bad)";
      }
    } });
    for (const f of fields) {
      let input;
      if (f.options) {
        input = h("select", { name: f.name }, f.options.map((o) => h("option", { value: o }, o)));
        if (f.value !== undefined) input.value = f.value;
      } else if (f.type === "textarea") {
        input = h("textarea", { name: f.name, rows: 2, cols: 30, placeholder: f.placeholder || "" });
      } else {
        input = h("input", { name: f.name, type: f.type || "text", value: f.value, placeholder: f.placeholder || "",
                             size: f.size || 14 });
      }
      inputs[f.name] = input;
      el.append(f.type === "checkbox" ? h("label", { class: "check" }, input, f.label) : h("label", {}, f.label, input));
    }
    el.append(h("button", { type: "submit" }, label || "Submit"), status);
    el.inputs = inputs;
    return el;
  }

  function table(columns, rows, rowAttrs) {
    return h("table", {},
      h("thead", {}, h("tr", {}, columns.map((c) => h("th", { class: c.num ? "num" : "" }, c.title)))),
      h("tbody", {}, rows.map((r) => h("tr", rowAttrs ? rowAttrs(r) : {},
        columns.map((c) => h("td", { class: c.num ? "num" : "" }, c.render ? c.render(r) : fmt(r[c.key])))))));
  }

  function fmt(v) {
    if (v === null || v === undefined) return "–";
    if (typeof v === "number") return v.toLocaleString("en-US");
    return String(v);
  }

  function bytes(n) {
    if (n === null || n === undefined) return "–";
    const units = ["B", "KB", "MB", "GB", "TB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i || n % 1 ? n.toFixed(1) : n) + " " + units[i];
  }

  function time(ms) {
    if (ms === null || ms === undefined || ms < 0) return "–";
    return new Date(ms).toISOString().replace("T", " ").replace("Z", "");
  }

  function parseHash() {
    const raw = location.hash.replace(/^#\/?/, "");
    const [path, query] = raw.split("?");
    const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
    return { page: parts[0] || "overview", args: parts.slice(1), query: new URLSearchParams(query || "") };
  }

  function route() {
    generation++;
    timers.forEach(clearInterval);
    timers = [];
    const { page, args, query } = parseHash();
    const main = document.getElementById("main");
    main.replaceChildren();
    document.querySelectorAll("#nav a").forEach((a) => a.classList.toggle("active", a.dataset.page === page));
    const render = pages[page] || pages.overview;
    render(main, args, query);
  }

  function start() {
    window.addEventListener("hashchange", route);
    route();
  }

  return { h, api, panel, every, form, table, fmt, bytes, time, pages, start,
           current: () => generation };
})();
