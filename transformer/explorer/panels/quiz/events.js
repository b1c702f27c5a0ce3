// Changes the app pushes to the quiz's pages (Server-Sent Events, read with fetch so that a token stays in a
// header and never in a URL). A page follows its stream; when the stream is refused, fails, or says nothing in
// time (a proxy that holds it back), the page asks every second or two instead, as it always could.

const FIRST_EVENT_MS = 5000; // the app sends the view at once: nothing by then, and the page polls
const SHORTEST_MS = 5000; // a stream that ends sooner than this is not followed again: the page polls

/** The complete events in `text` ({ name, data } with data parsed from JSON) and the text after them. */
export function parseEvents(text) {
  const blocks = text.replace(/\r\n?/g, "\n").split("\n\n");
  const rest = blocks.pop();
  const events = [];
  for (const block of blocks) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
    }
    if (data.length) events.push({ name, data: JSON.parse(data.join("\n")) });
  }
  return { events, rest };
}

async function read(response, onView, heard) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return "ended";
    const parsed = parseEvents(text + value);
    text = parsed.rest;
    for (const event of parsed.events) {
      heard();
      if (event.name === "error") return "failed"; // the poll says why (an ended class, a store that failed)
      onView(event.data);
    }
  }
}

/** One stream from `url`: onView(view) for each view. "ended" when the app closed it, else "failed". */
export async function listen(url, headers, onView) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), FIRST_EVENT_MS);
  try {
    const response = await fetch(url, { headers, signal: controller.signal, cache: "no-store" });
    if (!response.ok || !response.body) return "failed";
    return await read(response, onView, () => clearTimeout(timer));
  } catch {
    return "failed";
  } finally {
    clearTimeout(timer);
  }
}

/** Follow the stream at `url` while it lasts and `more()` says so; then `poll()`, unless `more()` says not. */
export async function follow(url, headers, onView, more, poll) {
  for (;;) {
    const began = Date.now();
    const how = await listen(url, headers, onView);
    if (!more()) return;
    if (how === "failed" || Date.now() - began < SHORTEST_MS) return poll();
  }
}
