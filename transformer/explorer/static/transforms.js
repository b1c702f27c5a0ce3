// The view transforms, as transformer/explorer/maps/transforms.py computes them (hide_special, merge_subwords): a pure ES
// module, unit-tested under Node against the Python functions' own answers (tests/js/transforms.test.js, through
// tests/test_js.py). A map is an array of rows; an axis (`axis`) follows its tokens through the transforms.

// tokens of one axis: what the transforms need to follow along
export function axis(info) {
  return {label: info.label, raw: info.raw, shown: info.shown || info.raw, special: info.special, info,
    hidden: false, index: info.raw.map((_, i) => i)};  // each position's token index (the inside panel asks by it)
}

// transforms.hide_special: drop special rows and columns, renormalise rows; hidden = mean mass on removed keys
export function hideSpecial(w, q, k) {
  const keepQ = q.special.map((s) => !s), keepK = k.special.map((s) => !s);
  const rows = [], removed = [];
  w.forEach((row, i) => {
    if (!keepQ[i]) return;
    let gone = 0, total = 0;
    const kept = [];
    row.forEach((v, j) => { if (keepK[j]) { kept.push(v); total += v; } else gone += v; });
    removed.push(gone);
    rows.push(kept.map((v) => (total > 0 ? v / total : 0)));
  });
  const pick = (a, keep) => ({label: a.label.filter((_, i) => keep[i]), raw: a.raw.filter((_, i) => keep[i]),
    shown: a.shown.filter((_, i) => keep[i]),
    special: a.special.filter((_, i) => keep[i]), info: a.info, hidden: true,
    index: a.index ? a.index.filter((_, i) => keep[i]) : undefined});
  const hidden = removed.length ? removed.reduce((s, v) => s + v, 0) / removed.length : 0;
  return [rows, pick(q, keepQ), pick(k, keepK), hidden];
}

// transforms.merge_subwords: keys summed per word, queries averaged per word (groups from token_labels.word_groups)
export function mergeSubwords(w, q, k) {
  const words = (a) => (a.hidden
    ? {groups: a.info.groups_hidden, label: a.info.words_hidden, raw: a.info.words_hidden_raw}
    : {groups: a.info.groups, label: a.info.words, raw: a.info.words_raw});
  const qw = words(q), kw = words(k);
  const out = qw.label.map(() => kw.label.map(() => 0));
  const counts = qw.label.map(() => 0);
  qw.groups.forEach((g) => { counts[g] += 1; });
  w.forEach((row, i) => {
    const gi = qw.groups[i];
    row.forEach((v, j) => { out[gi][kw.groups[j]] += v / counts[gi]; });
  });
  const merged = (x) => ({label: x.label, raw: x.raw, shown: x.raw, special: x.label.map(() => false)});
  return [out, merged(qw), merged(kw)];
}

// hide specials (if `hide`) then merge subwords (if `merge`), as the page's toggles ask (reference_views.transform);
// `hidden` is the mean mass on removed keys, null when not hiding
export function transform(w, q, k, hide, merge) {
  let hidden = null;
  if (hide) [w, q, k, hidden] = hideSpecial(w, q, k);
  if (merge && q.label.length && k.label.length) [w, q, k] = mergeSubwords(w, q, k);
  return {z: w, q, k, hidden};
}
