// Small time-series plots on a canvas: one line per series, the last 15 minutes, y from 0.
"use strict";

const Plot = (() => {
  const COLORS = ["#2f5fd0", "#d0572f", "#2f9d6a", "#8e44ad", "#c49a00", "#17a2b8", "#6c757d"];

  function format(v, unit) {
    if (unit === "bytes") return Console.bytes(v) + "/s";
    if (unit === "ms") return v.toFixed(v < 10 ? 1 : 0) + " ms";
    if (unit === "rate") return (v < 10 ? v.toFixed(1) : Math.round(v).toLocaleString("en-US")) + "/s";
    return v < 10 && v % 1 ? v.toFixed(1) : Math.round(v).toLocaleString("en-US");
  }

  // series: [{name, points: [[unix seconds, value], ...]}]
  function line(parent, title, series, opts) {
    opts = opts || {};
    const windowS = opts.windowS || 900;
    const canvas = Console.h("canvas", {});
    const latest = series.map((s) => s.points.length ? s.points[s.points.length - 1][1] : null);
    const legend = Console.h("div", { class: "legend" }, series.map((s, i) =>
      Console.h("span", { style: "color:" + COLORS[i % COLORS.length] },
        "● " + s.name + (latest[i] === null ? "" : " " + format(latest[i], opts.unit)))));
    const box = Console.h("div", { class: "plot", "data-plot": opts.id || title },
      Console.h("div", { class: "title" }, Console.h("span", {}, title), Console.h("span", {}, "last 15 min")),
      canvas, legend);
    parent.append(box);
    requestAnimationFrame(() => draw(canvas, series, windowS, opts.unit));
    return box;
  }

  function draw(canvas, series, windowS, unit) {
    const ratio = window.devicePixelRatio || 1;
    const width = canvas.clientWidth || 400, height = canvas.clientHeight || 150;
    canvas.width = width * ratio;
    canvas.height = height * ratio;
    const ctx = canvas.getContext("2d");
    ctx.scale(ratio, ratio);
    const left = 64, right = 8, top = 8, bottom = 18;
    const now = Date.now() / 1000, start = now - windowS;
    let max = 0;
    for (const s of series) for (const [t, v] of s.points) if (t >= start && v > max) max = v;
    max = max > 0 ? max * 1.15 : 1;
    const x = (t) => left + (t - start) / windowS * (width - left - right);
    const y = (v) => top + (1 - v / max) * (height - top - bottom);
    ctx.strokeStyle = "#e3e7ec";
    ctx.fillStyle = "#667085";
    ctx.font = "11px system-ui, sans-serif";
    ctx.lineWidth = 1;
    for (let i = 0; i <= 4; i++) {
      const v = max * i / 4, yy = y(v);
      ctx.beginPath(); ctx.moveTo(left, yy); ctx.lineTo(width - right, yy); ctx.stroke();
      ctx.fillText(format(v, unit), 2, yy + 4);
    }
    for (let m = 0; m <= 15; m += 5) {
      const xx = x(now - m * 60);
      ctx.fillText(m ? "-" + m + "m" : "now", Math.min(xx - 8, width - 28), height - 4);
    }
    series.forEach((s, i) => {
      ctx.strokeStyle = COLORS[i % COLORS.length];
      ctx.lineWidth = 1.6;
      ctx.beginPath();
      let first = true;
      for (const [t, v] of s.points) {
        if (t < start) continue;
        if (first) { ctx.moveTo(x(t), y(v)); first = false; } else ctx.lineTo(x(t), y(v));
      }
      ctx.stroke();
      if (s.points.length === 1) {
        const [t, v] = s.points[0];
        ctx.fillStyle = COLORS[i % COLORS.length];
        ctx.fillRect(x(t) - 2, y(v) - 2, 4, 4);
      }
    });
  }

  return { line };
})();
