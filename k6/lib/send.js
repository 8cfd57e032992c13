// Sending a scenario's requests and counting its units: every scenario posts bodies its
// builder makes, one request or a batch (http.batch) per iteration, and accounts for each
// response the same way (the errors rate, units sent and acknowledged, the accepted requests'
// duration buckets).
import http from 'k6/http';
import { Counter, Rate } from 'k6/metrics';
import { bucketOf, makeBuckets } from './histogram.js';

let errors = null;

// The `errors` rate, fed on every request of every k6 scenario of a script: 1 when it failed
// (not 2xx), 0 when it was accepted. Declared once per VU (in the init context), where k6 is
// also told that only 2xx responses are expected, so that `expected_response:true` (the p99's
// durations, config.js OK_DURATION) holds exactly the requests `errors` counts as accepted.
export function errorRate() {
  if (errors === null) {
    errors = new Rate('errors');
    http.setResponseCallback(http.expectedStatuses({ min: 200, max: 299 }));
  }
  return errors;
}

// The scenario's own units: its counters, the units one request carries, and the duration
// buckets when several k6 instances combine their p99.
function ownUnits(cfg) {
  return {
    sent: cfg.scenario.sent, accepted: cfg.scenario.accepted, units: cfg.unitsPerRequest,
    buckets: cfg.histogram, perIteration: cfg.requestsPerIteration,
  };
}

// Call in the init context (k6 metrics are declared there). `build(n, nowMs)` returns the
// body of the run's n-th request of this VU; the returned function sends one iteration.
// `side` counts another unit than the scenario's own (logql-query's pushed lines).
export function makeSender(cfg, url, contentType, build, side) {
  const counts = side || ownUnits(cfg);
  const errors = errorRate();
  const sent = new Counter(counts.sent);
  const accepted = new Counter(counts.accepted);
  const durationBuckets = counts.buckets ? makeBuckets() : null;
  const units = counts.units;
  const params = { headers: { 'Content-Type': contentType }, responseType: 'none' };
  const batch = [];
  for (let i = 0; i < counts.perIteration; i++) batch.push(['POST', url, '', params]);

  function account(res) {
    const ok = res.status >= 200 && res.status < 300;
    errors.add(!ok);
    sent.add(units);
    if (ok) accepted.add(units);
    if (ok && durationBuckets) durationBuckets[bucketOf(res.timings.duration)].add(1);
  }

  return function send(iteration) {
    const now = Date.now();
    if (batch.length === 1) {
      account(http.post(url, build(iteration, now), params));
      return;
    }
    // Several requests per iteration go out in parallel (http.batch): less JS work per request.
    for (let i = 0; i < batch.length; i++) batch[i][2] = build(iteration * batch.length + i, now);
    const responses = http.batch(batch);
    for (let i = 0; i < responses.length; i++) account(responses[i]);
  };
}
