// The teacher's projector page: start a class, show how to join, the live tally beside the model's weights,
// Reveal and Next, the summary at the end. The teacher's token stays in this tab (sessionStorage), never in a
// URL. Every text is written with textContent.

import { follow } from "./events.js";

const POLL_MS = 1000;
const $ = (id) => document.getElementById(id);
const state = { code: "", token: "", view: null, model: "" };

async function api(path, options = {}) {
  const headers = { "Content-Type": "application/json", "X-Teacher-Token": state.token };
  const response = await fetch(`/class/api/${path}`, { ...options, headers });
  const body = await response.json().catch(() => ({ error: "The app did not answer." }));
  if (!response.ok) throw new Error(body.error || "The request failed: try again.");
  return body;
}

function cell(text, className = "") {
  return Object.assign(document.createElement("td"), { textContent: text, className });
}

/** The share of `part` in `whole` as a whole percent ("–" when nobody answered). */
export function percent(part, whole) {
  return whole > 0 ? `${Math.round((100 * part) / whole)}%` : "–";
}

function renderTally(view) {
  const q = view.question;
  const rows = q.words.map((word, i) => {
    const row = document.createElement("tr");
    if (view.revealed && q.answers.includes(i)) row.className = "top";
    row.append(cell(word), cell(`${view.counts[i]} (${percent(view.counts[i], view.answered)})`, "num"),
      cell(view.revealed ? `${Math.round(q.weights[i] * 100)}%` : "?", "num"));
    return row;
  });
  $("tally").replaceChildren(...rows);
}

function renderTranslation(q) {
  const box = $("translation");
  box.replaceChildren();
  q.translation.forEach((word, i) => {
    if (word === "<eos>") return;
    const node = document.createElement(i === q.target ? "mark" : "span");
    node.textContent = word;
    box.append(node, " ");
  });
}

async function renderSummary() {
  const body = await api(`${state.code}/summary`);
  const rows = body.questions.map((r) => {
    const row = document.createElement("tr");
    row.append(cell(r.head), cell(r.target), cell(r.answer.join(", ")),
      cell(`${r.missed} of ${r.answered} (${percent(r.missed, r.answered)})`, "num"));
    return row;
  });
  $("summary-rows").replaceChildren(...rows);
  $("summary").hidden = false;
}

function render(view) {
  const q = view.question;
  $("live").hidden = false;
  $("progress").textContent = `Question ${view.index + 1} of ${view.count}` + (view.finished ? " (finished)" : "");
  $("prompt").textContent = q.prompt;
  renderTranslation(q);
  $("count").textContent = `${view.answered} of ${view.students} answered`;
  renderTally(view);
  $("role").textContent = view.revealed ? q.role : "";
  $("reveal").disabled = view.revealed;
  $("next").disabled = view.finished;
  $("next").textContent = view.index + 1 >= view.count ? "Finish" : "Next question";
}

async function show(view) {
  const finishedNow = view.finished && !(state.view && state.view.finished);
  state.view = view;
  render(view);
  if (finishedNow) await renderSummary();
  $("error").textContent = "";
}

async function refresh() {
  try {
    await show(await api(`${state.code}/board`));
  } catch (err) {
    $("error").textContent = err.message;
  }
}

async function poll() {
  await refresh();
  setTimeout(poll, POLL_MS);
}

// the tally pushed by the app as answers come; asked every POLL_MS when the stream cannot be had
function listenOrPoll() {
  const finished = () => Boolean(state.view && state.view.finished);
  follow(`/class/api/${state.code}/board/events`, { "X-Teacher-Token": state.token }, show, () => !finished(), poll);
}

function showRoom(joinUrl, note, reachable) {
  $("start-form").hidden = true;
  $("room").hidden = false;
  $("code").textContent = state.code;
  $("join-url").textContent = joinUrl;
  $("reach").textContent = reachable ? "" : note;
  $("qr").src = `/class/qr/${state.code}.svg`;
}

// a board opened from the explorer's tab starts on the sentence on screen (?text=), which the teacher may change
function prefill() {
  const params = new URLSearchParams(location.search);
  const text = params.get("text");
  if (text) $("sentence").value = text.slice(0, 2000);
  state.model = params.get("model") || ""; // the model the sentence was on makes its quiz
}

async function startClass(event) {
  event.preventDefault();
  const specs = $("specs").value.trim();
  let request;
  try {
    request = specs ? { questions: JSON.parse(specs) } : { sentence: $("sentence").value };
    if (state.model) request.model = state.model;
  } catch {
    $("error").textContent = "The questions are not valid JSON.";
    return;
  }
  $("error").textContent = "Translating and choosing the questions…";
  try {
    const body = await api("classes", { method: "POST", body: JSON.stringify(request) });
    Object.assign(state, { code: body.code, token: body.teacher_token });
    sessionStorage.setItem("quiz-teacher", JSON.stringify({ ...body, teacher_token: state.token }));
    showRoom(body.join_url, body.note, body.reachable);
    $("error").textContent = "";
    listenOrPoll();
  } catch (err) {
    $("error").textContent = err.message;
  }
}

async function act(path) {
  try {
    await api(`${state.code}/${path}`, { method: "POST", body: "{}" });
    await refresh();
  } catch (err) {
    $("error").textContent = err.message;
  }
}

// what the quiz's operator should know (a damaged database moved aside), or why no class can start now
async function showStatus() {
  try {
    const response = await fetch("/class/api/status");
    const body = await response.json();
    $("notice").textContent = body.notice || "";
  } catch {
    $("notice").textContent = "";
  }
}

function start() {
  prefill();
  showStatus();
  $("start-form").addEventListener("submit", startClass);
  $("reveal").addEventListener("click", () => act("reveal"));
  $("next").addEventListener("click", () => act("next"));
  const saved = JSON.parse(sessionStorage.getItem("quiz-teacher") || "null");
  if (saved) {
    Object.assign(state, { code: saved.code, token: saved.teacher_token });
    showRoom(saved.join_url, saved.note, saved.reachable);
    listenOrPoll();
  }
}

if (typeof document !== "undefined") start();
