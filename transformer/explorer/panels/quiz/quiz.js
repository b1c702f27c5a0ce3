// The student's page of the class quiz: join, guess, see where the head really looks. At /class/practice?text=...
// the same page runs a quiz alone: the questions come with their answers, and each is revealed right after the
// guess (nothing is sent back). Every text is written with textContent (nothing a server or another student
// sends is ever read as HTML). No build step.

import { follow } from "./events.js";

const POLL_MS = 1500;
const CODE = /^[A-HJ-NP-Z2-9]{6}$/;

/** The room code in /class/CODE, or "". */
export function codeFromPath(path) {
  const code = (path.split("/")[2] || "").toUpperCase();
  return CODE.test(code) ? code : "";
}

/** Whether `path` is the practice page. */
export function isPractice(path) {
  return path.replace(/\/+$/, "") === "/class/practice";
}

/** Whether a guess names one of the head's top words. */
export function matches(chosen, answers) {
  return chosen.some((i) => answers.includes(i));
}

export const MAX_CHOICES = 2;  // words one guess may name (the server's limit too)
export const FULL_NOTE = "You have picked two words: tap one of them to take it back, then pick another.";

/** The chosen words after a tap on word `i`: toggled; null for a third choice, which is refused rather than put
 * in place of an earlier one unseen. */
export function toggleChoice(chosen, i) {
  if (chosen.includes(i)) return chosen.filter((j) => j !== i);
  return chosen.length < MAX_CHOICES ? [...chosen, i] : null;
}

const $ = (id) => document.getElementById(id);
const state = { code: "", token: "", index: -1, revealed: null, finished: false, chosen: [], sent: null, practice: null };

async function api(path, options = {}) {
  const headers = { "Content-Type": "application/json", "X-Student-Token": state.token };
  const response = await fetch(`/class/api/${state.code}/${path}`, { ...options, headers });
  const body = await response.json().catch(() => ({ error: "The app did not answer." }));
  if (!response.ok) throw Object.assign(new Error(body.error || "The request failed: try again."), { status: response.status });
  return body;
}

function showError(message) {
  $("error").textContent = message || "";
}

async function join(code) {
  state.code = code;
  state.token = localStorage.getItem(`quiz-student-${code}`) || "";
  if (!state.token) {
    const body = await api("join", { method: "POST", body: "{}" });
    state.token = body.student_token;
    localStorage.setItem(`quiz-student-${code}`, state.token);
  }
  $("join-form").hidden = true;
  $("wait").hidden = false;
  listenOrPoll();
}

function renderTranslation(question) {
  const box = $("translation");
  box.replaceChildren();
  question.translation.forEach((word, i) => {
    if (word === "<eos>") return;
    const node = i === question.target ? document.createElement("mark") : document.createElement("span");
    node.textContent = word;
    box.append(node, " ");
  });
}

function renderWords(question, locked) {
  const box = $("words");
  box.replaceChildren();
  question.words.forEach((word, i) => {
    const button = document.createElement("button");
    button.type = "button";
    button.textContent = word;
    button.setAttribute("aria-pressed", String(state.chosen.includes(i)));
    button.disabled = locked;
    button.addEventListener("click", () => {
      const chosen = toggleChoice(state.chosen, i);
      $("status").textContent = chosen === null ? FULL_NOTE : "";
      if (chosen === null) return;
      state.chosen = chosen;
      renderWords(question, locked);
      box.children[i].focus();
      $("send").disabled = state.chosen.length === 0;
    });
    box.append(button);
  });
}

function tag(text, className) {
  return Object.assign(document.createElement("span"), { className: `tag ${className}`, textContent: text });
}

// the head's row over the words: a bar per word with its weight written, the top word and the guess named in
// words (colour is never the only cue)
function renderReveal(question) {
  const bars = $("bars");
  bars.replaceChildren();
  $("reveal-head").textContent = question.head;
  question.words.forEach((word, i) => {
    const item = document.createElement("li");
    const percent = Math.round(question.weights[i] * 100);
    const label = Object.assign(document.createElement("span"), { className: "word", textContent: word });
    const bar = Object.assign(document.createElement("span"), { className: "bar" });
    bar.setAttribute("aria-hidden", "true");
    const fill = document.createElement("span");
    fill.style.width = `${percent}%`;
    bar.append(fill);
    const value = Object.assign(document.createElement("span"), { className: "value", textContent: `${percent}%` });
    item.append(label, bar, value);
    const tags = [];
    if (question.answers.includes(i)) { item.classList.add("top"); tags.push(tag("most weight", "top")); }
    if (state.chosen.includes(i)) { item.classList.add("guess"); tags.push(tag("your guess", "guess")); }
    if (tags.length) {
      const box = Object.assign(document.createElement("span"), { className: "tags" });
      box.append(...tags);
      item.append(box);
    }
    bars.append(item);
  });
  $("role").textContent = question.role;
  $("status").textContent = state.chosen.length === 0 ? "You did not guess this one." :
    matches(state.chosen, question.answers) ? "Your guess matches the head's top word." :
      "The head looked elsewhere than you guessed.";
}

function render(view) {
  $("wait").hidden = true;
  $("finished").hidden = !view.finished;
  $("question").hidden = view.finished;
  if (view.finished) return;
  const question = view.question;
  if (view.index !== state.index) {
    state.index = view.index;
    state.chosen = view.my_answer || [];
    state.sent = view.my_answer;
    $("status").textContent = "";
  }
  $("progress").textContent = `Question ${view.index + 1} of ${view.count}`;
  $("prompt").textContent = question.prompt;
  renderTranslation(question);
  renderWords(question, view.revealed);
  $("send").disabled = view.revealed || state.chosen.length === 0;
  $("reveal").hidden = !view.revealed;
  if (view.revealed) renderReveal(question);
  state.revealed = view.revealed;
  document.body.dataset.question = `${view.index}${view.revealed ? "-revealed" : ""}`;  // for tests: drawn
}

function show(view) {
  showError("");
  state.finished = view.finished;
  if (view.index !== state.index || view.revealed !== state.revealed || view.finished) render(view);
}

// the question pushed by the app as it changes; asked every POLL_MS when the stream cannot be had
function listenOrPoll() {
  follow(`/class/api/${state.code}/events`, { "X-Student-Token": state.token }, show, () => !state.finished, poll);
}

async function poll() {
  try {
    show(await api("question"));
  } catch (err) {
    if (err.status === 403) {
      localStorage.removeItem(`quiz-student-${state.code}`);
      state.token = "";
      return join(state.code);
    }
    showError(err.message);
    if (err.status === 404) return;
  }
  setTimeout(poll, POLL_MS);
}

async function send() {
  $("send").disabled = true;
  try {
    const body = await api("answer", { method: "POST", body: JSON.stringify({ question: state.index, words: state.chosen }) });
    state.sent = body.words;
    $("status").textContent = "Sent. You can change it until the reveal.";
    showError("");
  } catch (err) {
    showError(err.message);
  }
  $("send").disabled = state.chosen.length === 0 || state.revealed;
}

// ----------------------------------------------------------------------------- practice alone

function practiceView() {
  const p = state.practice;
  return { index: p.index, count: p.questions.length, revealed: p.revealed, finished: false,
    question: p.questions[p.index], my_answer: null };
}

function showPractice() {
  const p = state.practice;
  render(practiceView());
  $("send").textContent = "Check my guess";
  $("reveal-wait").hidden = true;
  $("link-line").hidden = !p.revealed;
  $("question-link").href = p.questions[p.index].link;
  $("next").hidden = !p.revealed;
  $("next").textContent = p.index + 1 < p.questions.length ? "Next question" : "See my score";
}

function checkGuess() {
  const p = state.practice;
  if (p.revealed || state.chosen.length === 0) return;
  p.revealed = true;
  if (matches(state.chosen, p.questions[p.index].answers)) p.matched += 1;
  showPractice();
  $("next").focus();
}

function nextPractice() {
  const p = state.practice;
  if (p.index + 1 < p.questions.length) {
    Object.assign(p, { index: p.index + 1, revealed: false });
    showPractice();
    $("prompt").setAttribute("tabindex", "-1");
    $("prompt").focus();
    return;
  }
  $("question").hidden = true;
  $("practice-end").hidden = false;
  $("score").textContent = `You matched the head's top word ${p.matched} time${p.matched === 1 ? "" : "s"} out of ${p.questions.length}.`;
  $("more-line").hidden = !p.more;
  if (p.more) $("more").href = p.more;
  document.body.dataset.question = "end";
  $("again").focus();
}

function restartPractice() {
  Object.assign(state.practice, { index: 0, revealed: false, matched: 0 });
  state.index = -1;
  $("practice-end").hidden = true;
  showPractice();
  $("prompt").setAttribute("tabindex", "-1");
  $("prompt").focus();
}

async function startPractice() {
  $("loading").hidden = false;
  $("send").addEventListener("click", checkGuess);
  $("next").addEventListener("click", nextPractice);
  $("again").addEventListener("click", restartPractice);
  try {
    const response = await fetch(`/class/api/practice${location.search}`);
    const body = await response.json().catch(() => ({ error: "The app did not answer." }));
    if (!response.ok) throw new Error(body.error || "The quiz could not be made: try again.");
    document.title = "Where will it look? Practice";
    state.practice = { questions: body.questions, more: body.more, index: 0, revealed: false, matched: 0 };
    showPractice();
  } catch (err) {
    showError(err.message);
    document.body.dataset.question = "error";
  }
  $("loading").hidden = true;
}

function start() {
  if (isPractice(location.pathname)) return startPractice();
  $("send").addEventListener("click", send);
  $("join-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const code = $("code").value.trim().toUpperCase();
    if (!CODE.test(code)) return showError("A room code is 6 letters and digits, as on the board.");
    history.replaceState(null, "", `/class/${code}`);
    join(code).catch((err) => showError(err.message));
  });
  const code = codeFromPath(location.pathname);
  if (code) join(code).catch((err) => showError(err.message));
  else $("join-form").hidden = false;
}

if (typeof document !== "undefined") start();
