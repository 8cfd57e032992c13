// The scenarios as k6 sees them: the name, the key of its k6 scenario, the function it runs,
// its counters and its unit. The same names as loadgate's registry
// (src/loadgate/contract/scenarios.py); tests/local/test_k6_scenarios.py checks they agree.

export const OTLP_LOGS = {
  name: 'otlp-logs', key: 'logs', exec: 'sendLogs',
  sent: 'log_records_sent', accepted: 'log_records_accepted', unit: 'log records',
};

export const OTLP_METRICS = {
  name: 'otlp-metrics', key: 'metrics', exec: 'sendMetrics',
  sent: 'data_points_sent', accepted: 'data_points_accepted', unit: 'data points',
};

export const LOKI_PUSH = {
  name: 'loki-push', key: 'push', exec: 'pushLines',
  sent: 'lines_sent', accepted: 'lines_accepted', unit: 'lines',
};
