// The quiz pages' reading of the app's Server-Sent Events (transformer/explorer/panels/quiz/events.js): whole
// events only, however the text arrives in pieces, comments skipped, an error event named.
import assert from "node:assert";
import test from "node:test";

import {parseEvents} from "../../transformer/explorer/panels/quiz/events.js";

const STREAM = 'data: {"index":0}\n\n: still here\n\nevent: error\ndata: {"error":"This class has ended."}\n\n';

test("a stream read in any pieces gives the same events, each once", () => {
  const whole = parseEvents(STREAM);
  assert.deepStrictEqual(whole.events, [{name: "message", data: {index: 0}},
    {name: "error", data: {error: "This class has ended."}}]);
  assert.strictEqual(whole.rest, "");
  for (let cut = 1; cut < STREAM.length; cut += 1) {
    const first = parseEvents(STREAM.slice(0, cut));
    const second = parseEvents(first.rest + STREAM.slice(cut));
    assert.deepStrictEqual([...first.events, ...second.events], whole.events, `cut at ${cut}`);
  }
});

test("CRLF line ends and a data line without its space are read too", () => {
  assert.deepStrictEqual(parseEvents('data:{"a":1}\r\n\r\ndata: {"b"').events, [{name: "message", data: {a: 1}}]);
  assert.strictEqual(parseEvents('data:{"a":1}\r\n\r\ndata: {"b"').rest, 'data: {"b"');
});
