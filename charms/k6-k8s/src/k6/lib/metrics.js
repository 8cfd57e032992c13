// OTLP/HTTP JSON metric payloads: N series x M data points a request, gauges, sums and
// histograms in turn. The pieces that do not change are prepared once per VU.
//
// Series: `loadgate_k6_gauge`, `loadgate_k6_counter` (a cumulative monotonic sum) and
// `loadgate_k6_histogram` (cumulative, explicit buckets), series j of a request is of kind
// j % 3 and carries the point attributes `run` (the run id: Prometheus counts a run's samples
// by it, the collector's remote-write exporter turning point attributes into labels) and
// `series` (j). The resource holds service.name, service.instance.id (`<instance>-vu<vu>`:
// the `instance` label, so every VU writes series of its own), loadtest.run_id and the run's
// labels (loadtest.label.<k>): the exporter writes those onto `target_info` only.
//
// Time stamps: Prometheus keeps one sample per series and millisecond, so a VU stamps its
// points with a clock of its own that never goes back and never repeats: a request's M points
// of a series are 1 ms apart, ending at `now` unless the VU already used those milliseconds
// (then right after the last one it used).

export const KINDS = ['gauge', 'sum', 'histogram'];
export const NAMES = { gauge: 'loadgate_k6_gauge', sum: 'loadgate_k6_counter', histogram: 'loadgate_k6_histogram' };

// String.prototype.concat sizes its result once; Array.prototype.join grows it piece by piece.
const CONCAT = String.prototype.concat;

function attr(key, value) {
  return `{"key":${JSON.stringify(key)},"value":{"stringValue":${JSON.stringify(String(value))}}}`;
}

// Explicit bounds of a histogram of `buckets` buckets: 1, 2, 4, ... (the last bucket is +Inf).
export function histogramBounds(buckets) {
  const bounds = [];
  for (let b = 0; b < buckets - 1; b++) bounds.push(2 ** b);
  return bounds;
}

// A pool of histogram point bodies (count, sum, bucket counts) with plausible values.
function histogramPool(size, buckets, random) {
  const bounds = `"explicitBounds":[${histogramBounds(buckets).join(',')}]`;
  const pool = [];
  for (let i = 0; i < size; i++) {
    const counts = [];
    let count = 0;
    for (let b = 0; b < buckets; b++) {
      const n = Math.floor(random() * 10);
      counts.push(`"${n}"`);
      count += n;
    }
    const sum = (count * (1 + random() * 2 ** (buckets - 1))).toFixed(3);
    pool.push(`"count":"${count}","sum":${sum},"bucketCounts":[${counts.join(',')}],${bounds},`);
  }
  return pool;
}

// Everything of a VU's requests that does not change: per kind the metric's head, per series
// its attributes, and the pools values are taken from.
export function metricParts(cfg, vu, random) {
  const resourceAttrs = [
    attr('service.name', cfg.serviceName),
    attr('service.instance.id', `${cfg.instance}-vu${vu}`),
    attr('loadtest.run_id', cfg.runId),
  ];
  for (const key of Object.keys(cfg.labels)) resourceAttrs.push(attr(`loadtest.label.${key}`, cfg.labels[key]));
  const series = { gauge: [], sum: [], histogram: [] };
  for (let j = 0; j < cfg.seriesPerRequest; j++) {
    series[KINDS[j % KINDS.length]].push({ j, attrs: `"attributes":[${attr('run', cfg.runId)},${attr('series', j)}]}` });
  }
  const heads = {
    gauge: `{"name":"${NAMES.gauge}","gauge":{"dataPoints":[`,
    sum: `{"name":"${NAMES.sum}","sum":{"aggregationTemporality":2,"isMonotonic":true,"dataPoints":[`,
    histogram: `{"name":"${NAMES.histogram}","histogram":{"aggregationTemporality":2,"dataPoints":[`,
  };
  const gauges = [];
  for (let i = 0; i < 256; i++) gauges.push((random() * 1000).toFixed(3));
  return {
    head: `{"resourceMetrics":[{"resource":{"attributes":[${resourceAttrs.join(',')}]},` +
      `"scopeMetrics":[{"scope":{"name":"loadgate.k6"},"metrics":[`,
    kinds: KINDS.filter((k) => series[k].length),
    heads,
    series,
    points: cfg.pointsPerSeries,
    start: `"startTimeUnixNano":"${Date.now()}000000",`,
    gauges,
    histograms: histogramPool(64, cfg.histogramBuckets, random),
    next: 0,
    lastMs: 0, // the VU's clock: the last millisecond it stamped
  };
}

// The milliseconds of a request's M points: 1 ms apart, never back, never repeated.
export function stamps(parts, nowMs) {
  const m = parts.points;
  const first = Math.max(nowMs - m + 1, parts.lastMs + 1);
  parts.lastMs = first + m - 1;
  const out = new Array(m);
  for (let k = 0; k < m; k++) out[k] = `"timeUnixNano":"${first + k}000000",`;
  return out;
}

// One request body: the VU's series, M points each. `iteration` makes the counters grow.
export function buildMetrics(parts, iteration, nowMs) {
  const times = stamps(parts, nowMs);
  const m = parts.points;
  const pieces = [parts.head];
  let next = parts.next;
  for (let g = 0; g < parts.kinds.length; g++) {
    const kind = parts.kinds[g];
    pieces.push(g ? ',' : '', parts.heads[kind]);
    const list = parts.series[kind];
    for (let s = 0; s < list.length; s++) {
      for (let k = 0; k < m; k++) {
        pieces.push(s || k ? ',{' : '{');
        if (kind === 'gauge') {
          pieces.push(times[k], `"asDouble":${parts.gauges[next++ & 255]},`);
        } else if (kind === 'sum') {
          pieces.push(parts.start, times[k], `"asDouble":${iteration * m + k + 1},`);
        } else {
          pieces.push(parts.start, times[k], parts.histograms[next++ & 63]);
        }
        pieces.push(list[s].attrs);
      }
    }
    pieces.push(']}}');
  }
  pieces.push(']}]}]}');
  parts.next = next & 1023;
  return CONCAT.apply('', pieces);
}
