// OTLP/HTTP JSON trace payloads: T traces a request, S spans a trace on average, each span with
// A attributes whose values are Z characters long. The pieces that do not change are prepared
// once per VU; an iteration fills in ids, time stamps and which prepared pieces it takes.
//
// Shape: a trace is a tree. Span 0 is its root, a server span of `loadgate-frontend`; every
// other span is the child of one of the (up to three) spans before it, starts inside its
// parent's time and ends before it. A span of depth 1 belongs to `loadgate-api`, a deeper one
// to `loadgate-db`: a request carries a resource (resourceSpans) per service, each with the
// attributes service.name, service.instance.id (`<instance>-vu<vu>`), `run` (the run id: the
// traces backend finds the run's spans by it) and the run's labels (loadtest.label.<k>).
//
// Sizes: a request's traces go in pairs of S - d and S + d spans (d drawn up to a third of S;
// an odd last trace has S), so a request carries exactly T x S spans and its traces still
// differ in size (6 to 12 spans at the default S = 9). Every size has a few tree shapes.
//
// Ids: a trace id is the VU's random prefix, its number and a counter of its traces (unique in
// the run); a span id is the trace counter and the span's place (unique in its trace).

// String.prototype.concat sizes its result once; Array.prototype.join grows it piece by piece.
const CONCAT = String.prototype.concat;

export const SERVICES = ['loadgate-frontend', 'loadgate-api', 'loadgate-db'];
const ROOT_US = 80000; // a root span lasts 80 ms
const SHAPES = 4; // tree shapes per trace size
const POOL_BYTES = 4 * 1024 * 1024; // attribute blocks per VU: at most about this much text
const NAMES = [
  ['GET /api/orders/{id}', 2],
  ['OrderService/Get', 2],
  ['SELECT orders', 3],
];
// Semantic attributes every span starts with (as far as A allows); then loadgate.attr.<i>.
const SEMANTIC = ['http.request.method', 'url.path', 'server.address', 'db.system', 'peer.service'];

function str(key, value) {
  return `{"key":${JSON.stringify(key)},"value":{"stringValue":${JSON.stringify(String(value))}}}`;
}

function hex(value, width) {
  return value.toString(16).padStart(width, '0');
}

// The spans of each trace in a request: pairs of S - d and S + d (d up to S / 3), an odd last S.
export function traceSizes(traces, spans, random) {
  const spread = Math.floor(spans / 3);
  const sizes = new Array(traces);
  for (let t = 0; t + 1 < traces; t += 2) {
    const d = Math.floor(random() * (spread + 1));
    sizes[t] = spans - d;
    sizes[t + 1] = spans + d;
  }
  if (traces % 2) sizes[traces - 1] = spans;
  return sizes;
}

// A time offset in microseconds as [whole milliseconds, the 6 digits of nanoseconds below].
function split(us) {
  return [Math.floor(us / 1000), String((us % 1000) * 1000).padStart(6, '0')];
}

// One tree of n spans: each span's parent, service, and its start and end inside the trace.
export function treeShape(n, random) {
  const spans = [];
  for (let k = 0; k < n; k++) {
    if (k === 0) {
      spans.push({ parent: -1, depth: 0, start: 0, dur: ROOT_US });
      continue;
    }
    const parent = k - 1 - Math.floor(random() * Math.min(k, 3));
    const p = spans[parent];
    // Inside its parent: it starts in the parent's first half and lasts 30-90% of what is left.
    const start = p.start + Math.floor(random() * (p.dur / 2));
    const room = p.start + p.dur - start; // at least 1: start is in the first half
    spans.push({ parent, depth: p.depth + 1, start, dur: Math.max(1, Math.floor(room * (0.3 + random() * 0.6))) });
  }
  return spans.map((s) => {
    const service = Math.min(s.depth, SERVICES.length - 1);
    const [name, kind] = NAMES[service];
    const [startMs, startSub] = split(s.start);
    const [endMs, endSub] = split(s.start + s.dur);
    return {
      parent: s.parent,
      service,
      head: `","name":${JSON.stringify(name)},"kind":${kind},"startTimeUnixNano":"`,
      startMs, startSub, endMs, endSub,
    };
  });
}

// Attribute blocks (`"attributes":[...]`) of A attributes, values of Z characters taken from
// one lorem text at random offsets.
function attributePool(count, size, text, random) {
  const blocks = Math.max(2, Math.min(32, Math.floor(POOL_BYTES / Math.max(1, count * size))));
  const pool = new Array(blocks);
  for (let b = 0; b < blocks; b++) {
    const attrs = [];
    for (let i = 0; i < count; i++) {
      const at = Math.floor(random() * (text.length - size + 1));
      const key = i < SEMANTIC.length ? SEMANTIC[i] : `loadgate.attr.${i}`;
      attrs.push(str(key, text.slice(at, at + size)));
    }
    pool[b] = `"attributes":[${attrs.join(',')}],"status":{"code":1}}`;
  }
  return pool;
}

// Everything of a VU's requests that does not change: each service's resource head, the tree
// shapes of every trace size, span-id suffixes, the attribute blocks.
export function traceParts(cfg, vu, text, random) {
  const heads = SERVICES.map((service) => {
    const attrs = [
      str('service.name', service),
      str('service.instance.id', `${cfg.instance}-vu${vu}`),
      str('run', cfg.runId),
    ];
    for (const key of Object.keys(cfg.labels)) attrs.push(str(`loadtest.label.${key}`, cfg.labels[key]));
    return `{"resource":{"attributes":[${attrs.join(',')}]},"scopeSpans":[{"scope":{"name":"loadgate.k6"},"spans":[`;
  });
  const spread = Math.floor(cfg.spansPerTrace / 3);
  const shapes = {};
  for (let n = cfg.spansPerTrace - spread; n <= cfg.spansPerTrace + spread; n++) {
    shapes[n] = [];
    for (let s = 0; s < SHAPES; s++) shapes[n].push(treeShape(n, random));
  }
  const suffixes = [];
  for (let k = 0; k < cfg.spansPerTrace + spread; k++) suffixes.push(hex(k + 1, 2));
  return {
    heads,
    shapes,
    suffixes,
    traces: cfg.tracesPerRequest,
    spans: cfg.spansPerTrace,
    prefix: hex(Math.floor(random() * 0xffffffff), 8) + hex(vu, 8),
    attrs: attributePool(cfg.spanAttributes, cfg.attributeSize, text, random),
    random,
    counter: 0, // the VU's traces so far
    next: 0,
  };
}

// One request body: T traces, their spans grouped by service, ending at `nowMs`.
export function buildTraces(parts, nowMs) {
  const groups = [[], [], []];
  const base = nowMs - ROOT_US / 1000;
  const sizes = traceSizes(parts.traces, parts.spans, parts.random);
  let next = parts.next;
  for (let t = 0; t < sizes.length; t++) {
    const c = hex(parts.counter++, 14);
    const traceId = parts.prefix + '00' + c;
    const shapes = parts.shapes[sizes[t]];
    const shape = shapes[parts.counter % shapes.length];
    for (let k = 0; k < shape.length; k++) {
      const s = shape[k];
      const parent = s.parent < 0 ? '' : `","parentSpanId":"${c}${parts.suffixes[s.parent]}`;
      groups[s.service].push(CONCAT.call(
        '{"traceId":"', traceId, '","spanId":"', c, parts.suffixes[k], parent, s.head,
        String(base + s.startMs), s.startSub, '","endTimeUnixNano":"', String(base + s.endMs), s.endSub,
        '",', parts.attrs[next],
      ));
      next = next + 1 === parts.attrs.length ? 0 : next + 1;
    }
  }
  parts.next = next;
  const pieces = ['{"resourceSpans":['];
  for (let g = 0; g < groups.length; g++) {
    if (!groups[g].length) continue;
    pieces.push(pieces.length > 1 ? ',' : '', parts.heads[g], groups[g].join(','), ']}]}');
  }
  pieces.push(']}');
  return CONCAT.apply('', pieces);
}
