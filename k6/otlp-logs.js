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

const errors = new Rate('errors');
const recordsSent = new Counter('log_records_sent');
const recordsAccepted = new Counter('log_records_accepted');
const durationBuckets = makeBuckets();

const POOL_SIZE = 512;
const pool = buildBodyPool(POOL_SIZE, cfg.bodyMin, cfg.bodyMax, Math.random);
const parts = requestParts(cfg, __VU || 1);
const url = `${cfg.target}/v1/logs`;
const params = { headers: { 'Content-Type': 'application/json' }, responseType: 'none' };

export function sendLogs() {
  const body = buildRequest(parts, pool, __ITER, Date.now(), Math.random);
  const res = http.post(url, body, params);
  const ok = res.status >= 200 && res.status < 300;
  errors.add(!ok);
  recordsSent.add(cfg.logsPerRequest);
  if (ok) recordsAccepted.add(cfg.logsPerRequest);
  durationBuckets[bucketOf(res.timings.duration)].add(1);
}

export function handleSummary(data) {
  const summary = summarize(data, cfg);
  return { [cfg.summaryPath]: JSON.stringify(summary, null, 1), stdout: textSummary(summary) };
}
