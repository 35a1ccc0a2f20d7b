// argrl run report: draws the page from the JSON block #report-data.
// Plain DOM and SVG, no libraries; text is only ever set as textContent.
(function () {
  'use strict';

  // ---- errors: every script error, failed resource, policy violation and
  // console.error lands in #report-status (data-state="error").
  var errors = [];
  function note(msg) {
    errors.push(String(msg));
    var st = document.getElementById('report-status');
    if (st) {
      st.dataset.state = 'error';
      st.textContent = errors.length + ' error(s): ' + errors.join(' | ');
    }
  }
  window.addEventListener('error', function (e) {
    var t = e.target;
    if (t && t !== window && (t.src || t.href)) {
      note('resource failed: ' + (t.src || t.href));
    } else {
      note((e.message || 'error') + ' at ' + (e.filename || '?') + ':' + (e.lineno || 0));
    }
  }, true);
  window.addEventListener('unhandledrejection', function (e) { note('unhandled rejection: ' + e.reason); });
  document.addEventListener('securitypolicyviolation', function (e) {
    note('blocked by the content security policy: ' + (e.blockedURI || '?') + ' (' + e.violatedDirective + ')');
  });
  var consoleError = console.error;
  console.error = function () {
    note(Array.prototype.join.call(arguments, ' '));
    consoleError.apply(console, arguments);
  };

  // ---- DOM helpers.
  var SVGNS = 'http://www.w3.org/2000/svg';
  function h(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) if (arguments[i]) parent.appendChild(arguments[i]);
    return parent;
  }
  function s(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs) if (attrs[k] !== undefined && attrs[k] !== null) e.setAttribute(k, attrs[k]);
    return e;
  }
  function fmt(v, digits) {
    if (v === null || v === undefined || isNaN(v)) return '–';
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
    return v.toFixed(digits === undefined ? 3 : digits);
  }

  var PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b', '#e377c2', '#17becf', '#7f7f7f', '#bcbd22'];
  var DASHES = [null, '6 3', '2 3', '9 3 2 3', '1 2', '12 4', '4 2 1 2'];

  // ---- ticks: 1-2-5 steps, about five labels, as few digits as needed.
  function niceStep(span, n) {
    var mag = Math.pow(10, Math.floor(Math.log10(span / n)));
    var best = mag, bestD = Infinity;
    [1, 2, 5, 10].forEach(function (m) {
      var d = Math.abs(Math.log(span / (m * mag) / n));
      if (d < bestD) { best = m * mag; bestD = d; }
    });
    return best;
  }
  function ticks(lo, hi, integer) {
    var step = niceStep(hi - lo, 5);
    if (integer && step < 1) step = 1;
    var sstep = Math.floor(Math.log10(step) + 1e-9);
    var top = Math.max(Math.abs(lo), Math.abs(hi)), expo = top < 1e-3 || top >= 1e6;
    var out = [];
    for (var k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) {
      var v = Math.round(k) * step, a = Math.abs(v), label;
      if (a < step / 2) label = '0';
      else if (!expo) label = v.toFixed(Math.max(0, -sstep));
      else {
        var e = Math.floor(Math.log10(a) + 1e-9);
        var m = (v / Math.pow(10, e)).toFixed(Math.max(0, e - sstep));
        if (m.indexOf('.') >= 0) m = m.replace(/0+$/, '').replace(/\.$/, '');
        label = m + 'e' + e;
      }
      out.push({ v: v, label: label });
    }
    return out;
  }

  // ---- one chart: the spec's series over every run.
  var W = 520, H = 230;

  function collect(d, spec) {
    var multi = d.runs.length > 1, items = [];
    d.runs.forEach(function (run, ri) {
      spec.series.forEach(function (ser, si) {
        var cols = ser.kind === 'eval' ? run.eval : run.train;
        var color = multi ? PALETTE[ri % PALETTE.length] : PALETTE[si % PALETTE.length];
        var label = (multi ? run.name + ': ' : '') + ser.label;
        var ev = ser.kind === 'eval';
        var it = { label: label, series: ser.label, run: ri, color: color, eval: ev, pts: [], band: null,
          dash: multi ? DASHES[si % DASHES.length] : (ev ? '5 3' : null) };
        if (ser.lo) {
          var lo = cols.keys[ser.lo], hi = cols.keys[ser.hi];
          if (!lo || !hi) return;
          it.band = [];
          cols.steps.forEach(function (x, i) { if (lo[i] !== null && hi[i] !== null) it.band.push([x, lo[i], hi[i]]); });
          if (!it.band.length) return;
        } else {
          var col = cols.keys[ser.key];
          if (!col) return;
          cols.steps.forEach(function (x, i) { it.pts.push(col[i] === null ? null : [x, col[i]]); });
          if (!it.pts.some(function (p) { return p !== null; })) return;
        }
        items.push(it);
      });
    });
    return items;
  }

  function chart(d, spec) {
    var items = collect(d, spec);
    if (!items.length) return null;
    var x0 = Infinity, x1 = -Infinity, y0 = Infinity, y1 = -Infinity;
    items.forEach(function (it) {
      (it.band || []).forEach(function (b) { x0 = Math.min(x0, b[0]); x1 = Math.max(x1, b[0]); y0 = Math.min(y0, b[1]); y1 = Math.max(y1, b[2]); });
      it.pts.forEach(function (p) { if (p) { x0 = Math.min(x0, p[0]); x1 = Math.max(x1, p[0]); y0 = Math.min(y0, p[1]); y1 = Math.max(y1, p[1]); } });
    });
    if (x1 <= x0) { x0 -= 1; x1 += 1; }
    if (y1 <= y0) { var pad = Math.abs(y0) > 0 ? Math.abs(y0) * 0.1 : 1; y0 -= pad; y1 += pad; }
    var yt = ticks(y0, y1, false), xt = ticks(x0, x1, true);
    var widest = 0;
    yt.forEach(function (t) { widest = Math.max(widest, t.label.length); });
    var M = { l: 26 + 6.6 * widest, r: 14, t: 10, b: 34 };
    var X = function (v) { return M.l + (v - x0) / (x1 - x0) * (W - M.l - M.r); };
    var Y = function (v) { return H - M.b - (v - y0) / (y1 - y0) * (H - M.t - M.b); };

    var box = h('figure', 'chart');
    box.id = 'chart-' + spec.id;
    add(box, h('figcaption', null, spec.title));
    var svg = s('svg', { viewBox: '0 0 ' + W + ' ' + H, role: 'img', 'aria-label': spec.title });
    yt.forEach(function (t) {
      add(svg, s('line', { x1: M.l, x2: W - M.r, y1: Y(t.v), y2: Y(t.v), 'class': 'grid' }));
      var tx = s('text', { x: M.l - 6, y: Y(t.v) + 4, 'text-anchor': 'end', 'class': 'tick' });
      tx.textContent = t.label;
      add(svg, tx);
    });
    xt.forEach(function (t) {
      add(svg, s('line', { x1: X(t.v), x2: X(t.v), y1: M.t, y2: H - M.b, 'class': 'grid' }));
      var tx = s('text', { x: X(t.v), y: H - M.b + 16, 'text-anchor': 'middle', 'class': 'tick' });
      tx.textContent = t.label;
      add(svg, tx);
    });
    add(svg, s('rect', { x: M.l, y: M.t, width: W - M.l - M.r, height: H - M.t - M.b, 'class': 'frame' }));
    var xl = s('text', { x: (M.l + W - M.r) / 2, y: H - 4, 'text-anchor': 'middle', 'class': 'axis' });
    xl.textContent = 'step';
    var yl = s('text', { x: 12, y: (M.t + H - M.b) / 2, 'text-anchor': 'middle', 'class': 'axis', transform: 'rotate(-90 12 ' + (M.t + H - M.b) / 2 + ')' });
    yl.textContent = spec.ylabel;
    add(svg, xl, yl);

    items.forEach(function (it) {
      if (it.band) {
        var up = it.band.map(function (b) { return X(b[0]) + ',' + Y(b[2]); });
        var down = it.band.slice().reverse().map(function (b) { return X(b[0]) + ',' + Y(b[1]); });
        add(svg, s('polygon', { points: up.concat(down).join(' '), fill: it.color, 'fill-opacity': 0.15, stroke: 'none' }));
        return;
      }
      var dpath = '', pen = false, n = 0;
      it.pts.forEach(function (p) {
        if (!p) { pen = false; return; }
        dpath += (pen ? 'L' : 'M') + X(p[0]).toFixed(1) + ' ' + Y(p[1]).toFixed(1);
        pen = true;
        n++;
      });
      add(svg, s('path', { d: dpath, fill: 'none', stroke: it.color, 'stroke-width': 1.6, 'stroke-dasharray': it.dash }));
      if (it.eval || n < 3) {
        it.pts.forEach(function (p) {
          if (p) add(svg, s('circle', { cx: X(p[0]), cy: Y(p[1]), r: 2.8, fill: it.color }));
        });
      }
    });

    // Hover: a guide at the nearest step and the values there.
    var guide = s('line', { y1: M.t, y2: H - M.b, 'class': 'guide', visibility: 'hidden' });
    var hit = s('rect', { x: M.l, y: M.t, width: W - M.l - M.r, height: H - M.t - M.b, fill: 'transparent' });
    add(svg, guide, hit);
    var readout = h('div', 'readout', '\u00a0');
    hit.addEventListener('mousemove', function (ev) {
      var r = svg.getBoundingClientRect();
      var sx = x0 + ((ev.clientX - r.left) / r.width * W - M.l) / (W - M.l - M.r) * (x1 - x0);
      var best = null;
      items.forEach(function (it) {
        (it.band || it.pts).forEach(function (p) { if (p && (best === null || Math.abs(p[0] - sx) < Math.abs(best - sx))) best = p[0]; });
      });
      if (best === null) return;
      guide.setAttribute('x1', X(best));
      guide.setAttribute('x2', X(best));
      guide.setAttribute('visibility', 'visible');
      var parts = ['step ' + best];
      items.forEach(function (it) {
        (it.band || it.pts).forEach(function (p) {
          if (p && p[0] === best) parts.push(it.label + ' ' + (it.band ? fmt(p[1]) + '…' + fmt(p[2]) : fmt(p[1])));
        });
      });
      readout.textContent = parts.join(' · ');
    });
    hit.addEventListener('mouseleave', function () { guide.setAttribute('visibility', 'hidden'); });
    add(box, svg);

    // The legend: one entry per series; with several runs, the runs by
    // colour, then the series by dash.
    var legend = h('div', 'legend'), multi = d.runs.length > 1, seen = {};
    function entry(label, color, dash, band, marker) {
      var sw = s('svg', { width: 22, height: 10, viewBox: '0 0 22 10', 'class': 'swatch' });
      if (band) add(sw, s('rect', { x: 0, y: 1, width: 22, height: 8, fill: color, 'fill-opacity': 0.25 }));
      else add(sw, s('line', { x1: 0, x2: 22, y1: 5, y2: 5, stroke: color, 'stroke-width': 2, 'stroke-dasharray': dash }));
      if (marker) add(sw, s('circle', { cx: 11, cy: 5, r: 2.8, fill: color }));
      add(legend, add(h('span', 'entry'), sw, h('span', null, label)));
    }
    items.forEach(function (it) {
      if (!multi) { entry(it.label, it.color, it.dash, !!it.band, it.eval); return; }
      if (!seen['run' + it.run]) { seen['run' + it.run] = true; entry(d.runs[it.run].name, it.color, null, false, false); }
    });
    if (multi) {
      items.forEach(function (it) {
        if (!seen['s' + it.series]) { seen['s' + it.series] = true; entry(it.series, '#667085', it.dash, !!it.band, it.eval); }
      });
    }
    add(box, legend, readout);
    return box;
  }

  // ---- sections.
  function section(id, title) {
    var sec = h('section');
    sec.id = id;
    add(sec, h('h2', null, title));
    return sec;
  }

  function summary(d) {
    var t = h('table', 'summary');
    var head = add(h('tr'), h('th', null, 'run'), h('th', null, 'algo'), h('th', null, 'model'), h('th', null, 'reward'),
      h('th', null, 'β'), h('th', null, 'steps'), h('th', null, 'evaluations'), h('th', null, 'best/'), h('th', null, 'directory'));
    add(t, add(h('thead'), head));
    var body = h('tbody');
    d.runs.forEach(function (r, ri) {
      var name = h('td');
      if (d.runs.length > 1) {
        var sw = s('svg', { width: 12, height: 12, viewBox: '0 0 12 12', 'class': 'swatch' });
        add(sw, s('rect', { width: 12, height: 12, rx: 2, fill: PALETTE[ri % PALETTE.length] }));
        add(name, sw);
      }
      add(name, h('span', null, ' ' + r.name));
      var best = '–';
      if (r.best_step > 0) {
        var i = r.eval.steps.indexOf(r.best_step), col = r.eval.keys[r.best_metric];
        best = 'step ' + r.best_step + (i >= 0 && col && col[i] !== null ? ' (' + r.best_metric + ' ' + fmt(col[i]) + ')' : '');
      }
      add(body, add(h('tr'), name, h('td', null, r.algo || '?'), h('td', null, r.model), h('td', null, r.algo === 'sft' ? '–' : r.reward || '–'),
        h('td', null, r.algo === 'sft' ? '–' : r.beta), h('td', null, r.last_step + (r.max_steps ? ' / ' + r.max_steps : '')),
        h('td', null, r.eval.steps.length), h('td', null, best), h('td', 'path', r.dir)));
    });
    return add(t, body);
  }

  var RATES = ['tid', 'tsa', 'aca', 'alc', 'fcm'];
  var EVAL_COLS = RATES.concat(['exact_match', 'name_acc', 'arg_score', 'reward_mean', 'loss']);
  var HEAD = { tid: 'TID', tsa: 'TSA', aca: 'ACA', alc: 'ALC', fcm: 'FCM', exact_match: 'exact', name_acc: 'name', arg_score: 'args', reward_mean: 'reward', loss: 'loss' };

  function evalTable(r) {
    var box = h('div', 'evalrun');
    add(box, h('h3', null, r.name));
    if (!r.eval.steps.length) return add(box, h('p', 'muted', 'No evaluation logged yet.'));
    var cols = EVAL_COLS.filter(function (k) { return r.eval.keys[k]; });
    var t = h('table', 'evals');
    var hr = add(h('tr'), h('th', null, 'step'), h('th', null, 'checkpoint'));
    cols.forEach(function (k) { add(hr, h('th', null, HEAD[k])); });
    r.langs.forEach(function (l) { RATES.forEach(function (k) { add(hr, h('th', 'lang', HEAD[k] + ' ' + l)); }); });
    add(t, add(h('thead'), hr));
    var body = h('tbody');
    r.eval.steps.forEach(function (step, i) {
      var tr = h('tr', step === r.best_step ? 'best' : null);
      var ck = h('td');
      if (r.ckpts.indexOf(step) >= 0) add(ck, h('span', null, 'step-' + ('00000' + step).slice(-6)));
      if (step === r.best_step) add(ck, h('span', 'badge', 'best/'));
      add(tr, h('td', 'num', step), ck);
      cols.forEach(function (k) { add(tr, h('td', 'num', fmt(r.eval.keys[k][i]))); });
      r.langs.forEach(function (l) {
        RATES.forEach(function (k) { var c = r.eval.keys[k + '.' + l]; add(tr, h('td', 'num lang', c ? fmt(c[i]) : '–')); });
      });
      add(body, tr);
    });
    add(t, body);
    add(box, add(h('div', 'scroll'), t));
    if (r.langs.length) add(box, h('p', 'muted', 'Per language: ' + r.langs.join(', ') + ' (validation records by their lang field).'));
    return box;
  }

  function rollouts(d) {
    var v = d.rollouts, sec = section('rollouts', 'Rollouts');
    if (!v) return add(sec, h('p', 'muted', 'No rollouts recorded: GRPO and PPO runs write RUN/rollouts/step-NNNNNN.jsonl at every step that evaluates.'));
    var intro = 'Run ' + v.run + ', step ' + v.step + (v.eval_step ? ' (last evaluation at step ' + v.eval_step + ')' : '') +
      ': ' + v.groups.length + ' group(s), β = ' + v.beta + '.';
    add(sec, h('p', null, intro));
    var key = h('p', 'key');
    add(key, h('span', null, 'Legend: '), h('span', 'tk', 'token'), h('span', 'tk odd', 'boundaries'), h('span', null, ' · '),
      h('span', 'tk v', 'argument value'), h('span', null, ' · '), h('span', 'tk w', 'β-weighted token'), h('span', null, ' (hover a token for its index and weight)'));
    add(sec, key);
    v.groups.forEach(function (g) {
      var box = h('div', 'group');
      add(box, h('h3', null, 'group ' + g.group + ' · ' + g.prompt_id + (g.lang ? ' · ' + g.lang : '')));
      if (g.prompt) add(box, add(h('div', 'prompt'), h('span', 'role', 'user'), h('span', null, g.prompt)));
      var gold = h('details', 'gold');
      add(gold, h('summary', null, 'gold calls'), h('pre', null, g.gold || '[]'));
      add(box, gold);
      var lo = Infinity, hi = -Infinity;
      g.samples.forEach(function (x) { lo = Math.min(lo, x.reward); hi = Math.max(hi, x.reward); });
      g.samples.forEach(function (x) { add(box, sample(x, lo, hi)); });
      add(sec, box);
    });
    return sec;
  }

  function sample(x, lo, hi) {
    var box = h('div', 'sample');
    var meta = h('div', 'meta');
    var rank = hi > lo ? (x.reward - lo) / (hi - lo) : 0.5;
    add(meta, h('span', 'idx', '#' + x.index), h('span', 'reward r' + Math.round(rank * 4), 'reward ' + fmt(x.reward)));
    if (x.gate) add(meta, h('span', 'chip', 'gate ' + x.gate));
    add(meta, h('span', 'chip', 'A ' + (x.adv >= 0 ? '+' : '') + fmt(x.adv)));
    RATES.forEach(function (k) {
      if (x.levels) { var ok = x.levels[k]; add(meta, h('span', 'lvl ' + (ok ? 'pass' : 'fail'), HEAD[k] + (ok ? ' ✓' : ' ✗'))); }
    });
    add(meta, h('span', 'muted', x.tokens + ' tokens, ' + x.weighted + ' β-weighted, ' + (x.finish || '?')));
    add(box, meta);
    if (x.parts) {
      var ks = Object.keys(x.parts).sort();
      if (ks.length) add(box, h('div', 'parts', 'parts: ' + ks.map(function (k) { return k + ' ' + fmt(x.parts[k]); }).join(' · ')));
    }
    var pre = h('pre', 'text');
    if (!x.segs.length) add(pre, h('span', 'muted', '(empty response)'));
    x.segs.forEach(function (sg) {
      var cls = 'tk' + (sg[1] >= 0 && sg[1] % 2 ? ' odd' : '') + (sg[2] !== 1 ? ' w' : '') + (sg[3] ? ' v' : '');
      var sp = h('span', cls, sg[0]);
      sp.title = sg[1] >= 0 ? 'token ' + sg[1] + ', w = ' + sg[2] + (sg[3] ? ', argument value' : '') : 'no token';
      add(pre, sp);
    });
    add(box, pre);
    if (x.values.length) add(box, h('div', 'values', 'argument values: ' + x.values.map(function (t) { return JSON.stringify(t); }).join(', ')));
    return box;
  }

  function configs(d) {
    var sec = section('config', 'Resolved config');
    d.runs.forEach(function (r, i) {
      var det = h('details');
      det.open = i === 0;
      add(det, h('summary', null, r.name + ': ' + r.dir + '/config.yaml'), h('pre', 'config', r.config || '(no config.yaml)'));
      add(sec, det);
    });
    return sec;
  }

  function render(d) {
    var root = document.getElementById('report');
    document.title = d.title;
    var head = h('header');
    add(head, h('h1', null, d.title), h('p', 'muted', 'Generated ' + d.generated + (d.live ? ' · live: reloads when the run writes' : '')));
    var nav = h('nav');
    [['curves', 'Curves'], ['evaluation', 'Evaluation'], ['rollouts', 'Rollouts'], ['config', 'Config']].forEach(function (l) {
      var a = h('a', null, l[1]);
      a.href = '#' + l[0];
      add(nav, a);
    });
    add(head, nav, summary(d));
    add(root, head);

    var curves = section('curves', 'Curves');
    var grid = h('div', 'grid');
    d.charts.forEach(function (c) { add(grid, chart(d, c)); });
    add(curves, grid);
    if (d.others.length) {
      var det = h('details', 'others');
      var og = h('div', 'grid small');
      add(det, h('summary', null, 'All metrics (' + d.others.length + ' more keys)'), og);
      var drawn = false;
      det.addEventListener('toggle', function () {
        if (drawn || !det.open) return;
        drawn = true;
        d.others.forEach(function (c) { add(og, chart(d, c)); });
      });
      add(curves, det);
    }
    add(root, curves);

    var ev = section('evaluation', 'Evaluation per checkpoint');
    d.runs.forEach(function (r) { add(ev, evalTable(r)); });
    add(root, ev, rollouts(d), configs(d));

    if (d.live) {
      setInterval(function () {
        fetch('stamp', { cache: 'no-store' }).then(function (r) { return r.ok ? r.text() : ''; })
          .then(function (t) { if (t && t.trim() !== d.stamp) location.reload(); }, function () { });
      }, 5000);
    }
  }

  document.addEventListener('DOMContentLoaded', function () {
    try {
      render(JSON.parse(document.getElementById('report-data').textContent));
    } catch (e) {
      note('render: ' + (e && e.stack ? e.stack : e));
      return;
    }
    var st = document.getElementById('report-status');
    if (st) st.dataset.height = String(document.documentElement.scrollHeight);
    if (!errors.length && st) {
      st.dataset.state = 'ok';
      st.textContent = 'rendered offline';
    }
  });
})();
