// Scenario otlp-logs: OTLP/HTTP JSON log records to <LOAD_TARGET>/v1/logs.
// Parameterised only through LOAD_* environment variables (see lib/config.js).
import http from 'k6/http';
import { Counter, Rate } from 'k6/metrics';
import { readConfig, optionsFor } from './lib/config.js';
import { buildBodyPool, requestParts, buildRequest } from './lib/payload.js';
import { summarize, textSummary } from './lib/summary.js';
import { bucketOf, makeBuckets } from './lib/histogram.js';

const cfg = readConfig(__ENV);
export const options = optionsFor(cfg);

// Fed on every request: 1 when it failed (not 2xx), 0 when it was accepted.
const errors = new Rate('errors');
const recordsSent = new Counter('log_records_sent');
const recordsAccepted = new Counter('log_records_accepted');
const durationBuckets = cfg.histogram ? makeBuckets() : null;

const POOL_SIZE = 512;
const pool = buildBodyPool(POOL_SIZE, cfg.bodyMin, cfg.bodyMax, Math.random);
const parts = requestParts(cfg, __VU || 1, pool);
const url = `${cfg.target}/v1/logs`;
const params = { headers: { 'Content-Type': 'application/json' }, responseType: 'none' };
const batch = [];
for (let i = 0; i < cfg.requestsPerIteration; i++) batch.push(['POST', url, '', params]);

function account(res) {
  const ok = res.status >= 200 && res.status < 300;
  errors.add(!ok);
  recordsSent.add(cfg.logsPerRequest);
  if (ok) recordsAccepted.add(cfg.logsPerRequest);
  if (durationBuckets) durationBuckets[bucketOf(res.timings.duration)].add(1);
}

export function sendLogs() {
  const now = Date.now();
  if (batch.length === 1) {
    account(http.post(url, buildRequest(parts, __ITER, now), params));
    return;
  }
  // Several requests per iteration go out in parallel (http.batch): less JS work per request.
  for (let i = 0; i < batch.length; i++) batch[i][2] = buildRequest(parts, __ITER * batch.length + i, now);
  const responses = http.batch(batch);
  for (let i = 0; i < responses.length; i++) account(responses[i]);
}

export function handleSummary(data) {
  const summary = summarize(data, cfg);
  return { [cfg.summaryPath]: JSON.stringify(summary, null, 1), stdout: textSummary(summary) };
}
