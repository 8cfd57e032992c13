// Scenario otlp-logs: OTLP/HTTP JSON log records to <LOAD_TARGET>/v1/logs.
// Parameterised only through LOAD_* environment variables (see lib/config.js).
import { readConfig, optionsFor } from './lib/config.js';
import { buildBodyPool, requestParts, buildRequest } from './lib/payload.js';
import { makeSender } from './lib/send.js';
import { summarize, textSummary } from './lib/summary.js';

const cfg = readConfig(__ENV);
export const options = optionsFor(cfg);

const POOL_SIZE = 512;
const pool = buildBodyPool(POOL_SIZE, cfg.bodyMin, cfg.bodyMax, Math.random);
const parts = requestParts(cfg, __VU || 1, pool);
const send = makeSender(cfg, `${cfg.target}/v1/logs`, 'application/json',
  (n, now) => buildRequest(parts, n, now));

export function sendLogs() {
  send(__ITER);
}

export function handleSummary(data) {
  const summary = summarize(data, cfg);
  return { [cfg.summaryPath]: JSON.stringify(summary, null, 1), stdout: textSummary(summary, cfg) };
}
