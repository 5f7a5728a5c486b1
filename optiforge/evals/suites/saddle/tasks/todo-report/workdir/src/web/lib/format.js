export function fmt(n) {
  return n.toFixed(2); // TODO(carol): locale
}
