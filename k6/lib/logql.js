// LogQL queries of the lines a run pushes, while it pushes (logql-query), each answer checked.
//
// Every query iteration of a VU first pushes one probe line to a stream of its own
// ({job, service_name, stream="q<vu>", instance, loadtest_*}), `run=<run_id> i=<instance>
// q=<vu> p=<n> <text>`, then asks Loki, in turn, an instant and a range query of
//
//   sum(count_over_time({job="<job>", instance="<instance>"} |= "run=<run_id> i=<instance> q=<vu> " [w]))
//
// over the window of `query-window` seconds up to the query's time: Loki reads every stream
// the run writes (the bulk pushes and the probes) and filters its lines, and the count it
// returns is that VU's probe lines in the window, which the VU knows exactly (k6 VUs share no
// state, so what a VU pushed itself is the one thing it can check an answer against).
//
// The check: a probe is stamped at the middle of a millisecond (…500000 ns), query windows
// begin and end on whole milliseconds, so no probe sits on an edge whatever side of its
// window Loki closes. The answer must count at least every probe in the window that Loki
// acknowledged INGEST_DELAY_MS or more before the query, and at most every probe in the window
// the VU sent (acknowledged or not: a failed push may still have been stored). That is the
// ingestion delay's bound: a line Loki acknowledged is readable from its ingesters at once,
// so a second covers the time between the acknowledgement and the query's read. An answer
// outside the bounds (or unreadable) adds 1 to `wrong_answers`.
//
// Range queries evaluate `count_over_time(…[step])` every `step` (RANGE_POINTS points, the
// window rounded up to a whole step), from a start and end on whole steps (Loki aligns range
// queries to their step: these are aligned already): the points' windows tile the range, so
// the sum of the points is the count over (end - points x step, end].
import http from 'k6/http';
import { Counter, Trend } from 'k6/metrics';
import { bucketOf, makeBuckets } from './histogram.js';
import { errorRate } from './send.js';
import { streamLabels } from './loki.js';

export const INGEST_DELAY_MS = 1000;
export const RANGE_POINTS = 60;

// Everything of a VU's queries that does not change, and its probes so far.
export function queryParts(cfg, vu, texts) {
  const marker = `run=${cfg.runId} i=${cfg.instance} q=${vu} `;
  const selector = `{job=${JSON.stringify(cfg.serviceName)}, instance=${JSON.stringify(cfg.instance)}}`;
  const windowMs = cfg.queryWindowS * 1000;
  const stepMs = Math.ceil(windowMs / RANGE_POINTS);
  const labels = Object.assign(streamLabels(cfg, 0), { stream: `q${vu}` });
  return {
    target: cfg.target,
    marker,
    head: `{"streams":[{"stream":${JSON.stringify(labels)},"values":[["`,
    texts,
    next: Math.floor(Math.random() * texts.length),
    instant: `sum(count_over_time(${selector} |= ${JSON.stringify(marker)} [${windowMs}ms]))`,
    range: `sum(count_over_time(${selector} |= ${JSON.stringify(marker)} [${stepMs}ms]))`,
    windowMs,
    stepMs,
    probes: newProbes(),
    lastMs: 0,
    sent: 0,
  };
}

// The VU's probes, oldest first, in columns: their time stamps and when Loki answered (both
// rising: a VU pushes its probes one after the other), and how many were acknowledged before
// each (okBefore[i]: among the first i). Old ones are dropped from the front (`start`), the
// columns cut down now and then; so an answer's bounds take two binary searches, not a walk.
function newProbes() {
  return { ms: [], ackedAt: [], okBefore: [0], start: 0 };
}

export function addProbe(probes, ms, ok, ackedAt) {
  probes.ms.push(ms);
  probes.ackedAt.push(ackedAt);
  probes.okBefore.push(probes.okBefore[probes.okBefore.length - 1] + (ok ? 1 : 0));
}

// The first index from `from` whose value is at least (`strict`: more than) x.
function firstAtLeast(values, x, from, strict) {
  let lo = from;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (values[mid] < x || (strict && values[mid] === x)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

// The probe's push body; `ms` its time stamp (a millisecond of its own).
export function probeBody(parts, ms) {
  const text = parts.texts[parts.next];
  parts.next = parts.next + 1 === parts.texts.length ? 0 : parts.next + 1;
  const line = `${parts.marker}p=${parts.sent} ${text}`;
  return `${parts.head}${ms}500000",${JSON.stringify(line)}]]}]}`;
}

// A query's request: what it asks and the window its answer covers, [lo, hi) in probe ms.
export function querySpec(parts, kind, nowMs) {
  const q = encodeURIComponent;
  if (kind === 'instant') {
    const url = `${parts.target}/loki/api/v1/query?query=${q(parts.instant)}&time=${nowMs}000000`;
    return { kind, url, lo: nowMs - parts.windowMs, hi: nowMs };
  }
  const step = parts.stepMs;
  const end = Math.floor(nowMs / step) * step;
  const start = end - (RANGE_POINTS - 1) * step;
  const url = `${parts.target}/loki/api/v1/query_range?query=${q(parts.range)}` +
    `&start=${start}000000&end=${end}000000&step=${step}ms`;
  return { kind, url, lo: end - RANGE_POINTS * step, hi: end };
}

// The bounds an answer must lie in: [probes acknowledged by nowMs - INGEST_DELAY_MS, probes sent]
// among those stamped in [lo, hi).
export function expected(parts, spec, nowMs) {
  const p = parts.probes;
  const first = firstAtLeast(p.ms, spec.lo, p.start, false);
  const end = firstAtLeast(p.ms, spec.hi, first, false);
  const settled = firstAtLeast(p.ackedAt, nowMs - INGEST_DELAY_MS, p.start, true);
  const upTo = Math.min(end, settled);
  const least = upTo > first ? p.okBefore[upTo] - p.okBefore[first] : 0;
  return [least, end - first];
}

// The count in a Loki answer (vector or matrix: the sum of its values); NaN when unreadable.
export function countOf(body) {
  let data;
  try {
    data = JSON.parse(body);
  } catch (e) {
    return NaN;
  }
  if (!data || data.status !== 'success' || !data.data || !Array.isArray(data.data.result)) return NaN;
  let total = 0;
  for (const series of data.data.result) {
    const values = series.values || (series.value ? [series.value] : []);
    for (const v of values) total += Number(v[1]);
  }
  return total;
}

// Drop the probes no later window can hold (cutting the columns once half of them are gone).
export function forget(parts, nowMs) {
  const p = parts.probes;
  const oldest = nowMs - Math.max(parts.windowMs, RANGE_POINTS * parts.stepMs) - INGEST_DELAY_MS;
  p.start = firstAtLeast(p.ms, oldest, p.start, false);
  if (p.start > 1024 && p.start * 2 > p.ms.length) {
    p.ms = p.ms.slice(p.start);
    p.ackedAt = p.ackedAt.slice(p.start);
    p.okBefore = p.okBefore.slice(p.start);
    p.start = 0;
  }
}

// Call in the init context. The returned function runs one query iteration: the probe, then
// `requestsPerIteration` queries (in parallel with http.batch when more than one), instant and
// range in turn, each answer checked.
export function makeQuerier(cfg, parts) {
  const errors = errorRate();
  const queriesSent = new Counter(cfg.scenario.sent);
  const queriesAccepted = new Counter(cfg.scenario.accepted);
  const linesSent = new Counter(cfg.scenario.push.sent);
  const linesAccepted = new Counter(cfg.scenario.push.accepted);
  const wrong = new Counter(cfg.scenario.wrong);
  const duration = new Trend(cfg.scenario.duration, true);
  const durationBuckets = cfg.histogram ? makeBuckets() : null;
  const pushUrl = `${cfg.target}/loki/api/v1/push`;
  const pushParams = { headers: { 'Content-Type': 'application/json' }, responseType: 'none' };
  const queryParams = { responseType: 'text', tags: { name: 'logql' } };

  function probe() {
    const ms = Math.max(Date.now(), parts.lastMs + 1);
    parts.lastMs = ms;
    const res = http.post(pushUrl, probeBody(parts, ms), pushParams);
    parts.sent += 1;
    const ok = res.status >= 200 && res.status < 300;
    errors.add(!ok);
    linesSent.add(1);
    if (ok) linesAccepted.add(1);
    addProbe(parts.probes, ms, ok, Date.now());
  }

  function check(spec, res, nowMs) {
    const ok = res.status >= 200 && res.status < 300;
    errors.add(!ok);
    queriesSent.add(1);
    if (!ok) return; // a failed query is an error, not a latency
    duration.add(res.timings.duration, { query: spec.kind });
    if (durationBuckets) durationBuckets[bucketOf(res.timings.duration)].add(1);
    queriesAccepted.add(1);
    const [least, most] = expected(parts, spec, nowMs);
    const count = countOf(res.body);
    wrong.add(count >= least && count <= most ? 0 : 1, { query: spec.kind });
  }

  return function query(iteration) {
    probe();
    const nowMs = Date.now();
    forget(parts, nowMs);
    const specs = [];
    for (let i = 0; i < cfg.requestsPerIteration; i++) {
      const n = iteration * cfg.requestsPerIteration + i;
      specs.push(querySpec(parts, n % 2 ? 'range' : 'instant', nowMs));
    }
    if (specs.length === 1) {
      check(specs[0], http.get(specs[0].url, queryParams), nowMs);
      return;
    }
    const responses = http.batch(specs.map((s) => ['GET', s.url, null, queryParams]));
    for (let i = 0; i < responses.length; i++) check(specs[i], responses[i], nowMs);
  };
}
