// Scenario otlp-metrics: OTLP/HTTP JSON metrics to <LOAD_TARGET>/v1/metrics, N series x M data
// points a request (gauges, sums and histograms; see lib/metrics.js).
// Parameterised only through LOAD_* environment variables (see lib/config.js).
import { readMetricsConfig, optionsFor } from './lib/config.js';
import { metricParts, buildMetrics } from './lib/metrics.js';
import { makeSender } from './lib/send.js';
import { summarize, textSummary } from './lib/summary.js';

const cfg = readMetricsConfig(__ENV);
export const options = optionsFor(cfg);

const parts = metricParts(cfg, __VU || 1, Math.random);
const send = makeSender(cfg, `${cfg.target}/v1/metrics`, 'application/json',
  (n, now) => buildMetrics(parts, n, now));

export function sendMetrics() {
  send(__ITER);
}

export function handleSummary(data) {
  const summary = summarize(data, cfg);
  return { [cfg.summaryPath]: JSON.stringify(summary, null, 1), stdout: textSummary(summary, cfg) };
}
