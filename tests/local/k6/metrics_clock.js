// The otlp-metrics payload builder on a clock that stands still, goes back and jumps ahead:
// the bodies it builds go to the file named by OUT, for tests/local/test_k6_scenarios.py.
import { readMetricsConfig } from '../../../k6/lib/config.js';
import { metricParts, buildMetrics } from '../../../k6/lib/metrics.js';

const cfg = readMetricsConfig({
  LOAD_SERIES_PER_REQUEST: '3', LOAD_POINTS_PER_SERIES: '4', LOAD_HISTOGRAM_BUCKETS: '5',
  LOAD_RUN_ID: 'clock',
});
const parts = metricParts(cfg, 1, Math.random);
const nows = [1000000, 1000000, 1000000, 1000002, 999000, 2000000];
const bodies = nows.map((now, i) => JSON.parse(buildMetrics(parts, i, now)));

export const options = { iterations: 1, vus: 1 };
export default function () {}
export function handleSummary() {
  return { [__ENV.OUT]: JSON.stringify({ nows, bodies }) };
}
