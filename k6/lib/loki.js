// Loki push API payloads (JSON, `POST /loki/api/v1/push`): S streams x L lines a request.
//
// A run writes `lokiStreams` streams, {job="loadgate-k6", service_name="loadgate-k6",
// stream="s<k>", instance="<instance>"} plus the run's labels as `loadtest_<k>`; each request
// takes S of them in turn, from a place that moves on with the VU and the iteration. Every
// line starts with `run=<run_id> i=<instance> vu=<vu> n=<line> it=<iteration> ` (the marker
// LogQL counts a run's lines by, the same as otlp-logs') followed by lorem text from the
// VU's pool, so no two lines are equal and Loki never deduplicates one.

const CONCAT = String.prototype.concat;

export function streamLabels(cfg, k) {
  const labels = { job: cfg.serviceName, service_name: cfg.serviceName, stream: `s${k}`, instance: cfg.instance };
  for (const key of Object.keys(cfg.labels)) labels[`loadtest_${key}`] = cfg.labels[key];
  return labels;
}

// Everything of a VU's requests that does not change: each stream's head, the line marker,
// the line tails (text and the entry's end).
export function pushParts(cfg, vu, texts) {
  const heads = new Array(cfg.lokiStreams);
  for (let k = 0; k < cfg.lokiStreams; k++) {
    heads[k] = `{"stream":${JSON.stringify(streamLabels(cfg, k))},"values":[`;
  }
  return {
    heads,
    vu,
    streams: cfg.streamsPerRequest,
    lines: cfg.linesPerStream,
    marker: `"run=${cfg.runId} i=${cfg.instance} vu=${vu} n=`,
    slot: (vu % 1000) * 1000,
    tails: texts.map((text) => ' ' + text + '"]'),
    next: Math.floor(Math.random() * texts.length),
  };
}

// One request body. Time stamps are `now` in nanoseconds with the VU and the line in the
// digits below the millisecond.
export function buildPush(parts, iteration, nowMs) {
  const p = parts.heads.length;
  const first = ((parts.vu - 1) * parts.streams + iteration * parts.streams) % p;
  const it = ` it=${iteration}`;
  const ms = String(nowMs);
  const pieces = ['{"streams":['];
  let n = 0;
  let next = parts.next;
  for (let s = 0; s < parts.streams; s++) {
    pieces.push(s ? ',' : '', parts.heads[(first + s) % p]);
    for (let l = 0; l < parts.lines; l++, n++) {
      const nanos = String(parts.slot + (n % 1000)).padStart(6, '0');
      pieces.push(l ? ',["' : '["', ms, nanos, '",', parts.marker, String(n), it, parts.tails[next]);
      next = next + 1 === parts.tails.length ? 0 : next + 1;
    }
    pieces.push(']}');
  }
  pieces.push(']}');
  parts.next = next;
  return CONCAT.apply('', pieces);
}
