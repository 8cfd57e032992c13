// A log-scale histogram of request durations kept in k6 counters (one counter per bucket).
// Bucket b holds durations in (BASE_MS * 2^(b/PER_OCTAVE), BASE_MS * 2^((b+1)/PER_OCTAVE)];
// eight buckets per doubling bound the relative error of a quantile to about 9%.
import { Counter } from 'k6/metrics';

export const BUCKET_PREFIX = 'req_duration_bucket_';
export const BASE_MS = 0.05;
export const PER_OCTAVE = 8;
export const BUCKETS = 176; // up to ~200 s

export function bucketOf(ms) {
  if (!(ms > BASE_MS)) return 0;
  const b = Math.ceil(Math.log2(ms / BASE_MS) * PER_OCTAVE) - 1;
  return b < 0 ? 0 : b >= BUCKETS ? BUCKETS - 1 : b;
}

export function makeBuckets() {
  const counters = new Array(BUCKETS);
  for (let b = 0; b < BUCKETS; b++) counters[b] = new Counter(BUCKET_PREFIX + String(b).padStart(3, '0'));
  return counters;
}
