// handleSummary helpers: a JSON summary for programs and a short text summary for people.

function metric(data, name) {
  return (data.metrics && data.metrics[name] && data.metrics[name].values) || {};
}

function thresholdResults(data) {
  const out = {};
  for (const name of Object.keys(data.metrics || {})) {
    const th = data.metrics[name].thresholds;
    if (!th) continue;
    for (const expr of Object.keys(th)) out[`${name}{${expr}}`] = { metric: name, expression: expr, ok: th[expr].ok };
  }
  return out;
}

import { BUCKET_PREFIX, BASE_MS, PER_OCTAVE } from './histogram.js';
import { durationMetricOf } from './config.js';

// Bucket counts of accepted requests' durations, so that several k6 instances' p99 can be combined exactly.
function histogramOf(data) {
  const counts = {};
  for (const name of Object.keys(data.metrics || {})) {
    if (name.indexOf(BUCKET_PREFIX) !== 0) continue;
    const n = data.metrics[name].values.count || 0;
    if (n) counts[String(Number(name.slice(BUCKET_PREFIX.length)))] = n;
  }
  return { base_ms: BASE_MS, per_octave: PER_OCTAVE, counts };
}

function withoutBuckets(metrics) {
  const out = {};
  for (const name of Object.keys(metrics)) if (name.indexOf(BUCKET_PREFIX) !== 0) out[name] = metrics[name];
  return out;
}

// What a scenario that pushes what it queries (logql-query) counts beside its own unit.
function pushedOf(data, cfg) {
  const s = cfg.scenario;
  if (!s.push) return {};
  return {
    lines_sent: metric(data, s.push.sent).count || 0,
    lines_accepted: metric(data, s.push.accepted).count || 0,
    wrong_answers: metric(data, s.wrong).count || 0,
  };
}

// `records_*` count the scenario's unit (log records, data points, lines, spans, queries); the
// p99 is of its duration metric (logql-query: its queries').
export function summarize(data, cfg) {
  const durationS = ((data.state && data.state.testRunDurationMs) || 0) / 1000;
  const sent = metric(data, cfg.scenario.sent).count || 0;
  const accepted = metric(data, cfg.scenario.accepted).count || 0;
  const errors = metric(data, 'errors');
  const reqs = metric(data, 'http_reqs').count || 0;
  const dur = metric(data, durationMetricOf(cfg));
  return Object.assign({
    format: 'loadgate-k6-summary/1',
    run_id: cfg.runId,
    instance: cfg.instance,
    scenario: cfg.scenario.name,
    executor: cfg.executor,
    target: cfg.target,
  }, cfg.perRequest, {
    requests_per_iteration: cfg.requestsPerIteration,
    duration_s: durationS,
    requests: reqs,
    failed: errors.passes || 0,
    error_rate: errors.rate === undefined ? 0 : errors.rate,
    p99_ms: dur['p(99)'] === undefined ? null : dur['p(99)'],
    p90_ms: dur['p(90)'] === undefined ? null : dur['p(90)'],
    p95_ms: dur['p(95)'] === undefined ? null : dur['p(95)'],
    avg_ms: dur.avg === undefined ? null : dur.avg,
    max_ms: dur.max === undefined ? null : dur.max,
    records_sent: sent,
    records_accepted: accepted,
    records_per_minute: durationS > 0 ? (accepted * 60) / durationS : 0,
    dropped_iterations: metric(data, 'dropped_iterations').count || 0,
  }, pushedOf(data, cfg), {
    thresholds: thresholdResults(data),
    latency_histogram: histogramOf(data),
    metrics: withoutBuckets(data.metrics || {}),
  });
}

function pad(text, width) {
  text = String(text);
  return text.length >= width ? text : text + ' '.repeat(width - text.length);
}

export function textSummary(s, cfg) {
  const unit = cfg.scenario.unit;
  const lines = [
    '',
    `  loadgate ${s.scenario}  run ${s.run_id}  instance ${s.instance}  ${s.executor}  ${s.duration_s.toFixed(1)}s`,
    `  requests ${s.requests}  failed ${s.failed}  error rate ${(s.error_rate * 100).toFixed(3)}%`,
    `  ${unit} sent ${s.records_sent}  accepted ${s.records_accepted}  per minute ${Math.round(s.records_per_minute)}`,
    `  ${cfg.scenario.duration ? 'query ' : ''}latency p95 ${s.p95_ms === null ? '-' : s.p95_ms.toFixed(2)} ms  p99 ${s.p99_ms === null ? '-' : s.p99_ms.toFixed(2)} ms`,
  ];
  if (cfg.scenario.push) {
    lines.push(`  lines pushed ${s.lines_sent}  accepted ${s.lines_accepted}  wrong answers ${s.wrong_answers} (of ${s.records_accepted} queries answered)`);
  }
  if (s.dropped_iterations) lines.push(`  dropped iterations ${s.dropped_iterations} (k6 had no free VU: those ${unit} were never sent)`);
  for (const key of Object.keys(s.thresholds)) {
    const t = s.thresholds[key];
    lines.push(`  ${t.ok ? 'ok  ' : 'FAIL'} ${pad(t.metric, 22)} ${t.expression}`);
  }
  return lines.join('\n') + '\n\n';
}
