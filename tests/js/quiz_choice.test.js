// A student's choice of words on the quiz page (transformer/explorer/panels/quiz/quiz.js): a tap toggles a word,
// and a third word is refused, not put in place of the first unseen.
import assert from "node:assert";
import test from "node:test";

import {MAX_CHOICES, toggleChoice} from "../../transformer/explorer/panels/quiz/quiz.js";

test("a tap picks a word and a second tap on it takes it back", () => {
  assert.deepStrictEqual(toggleChoice([], 3), [3]);
  assert.deepStrictEqual(toggleChoice([3], 5), [3, 5]);
  assert.deepStrictEqual(toggleChoice([3, 5], 3), [5]);
});

test("a third word is refused and the two chosen stay", () => {
  assert.strictEqual(MAX_CHOICES, 2);
  assert.strictEqual(toggleChoice([3, 5], 7), null);
  assert.deepStrictEqual(toggleChoice(toggleChoice([3, 5], 5), 7), [3, 7]);
});
