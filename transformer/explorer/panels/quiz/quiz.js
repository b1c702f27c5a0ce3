// The student's page of the class quiz: join, guess, see where the head really looks. Every text is written
// with textContent (nothing a server or another student sends is ever read as HTML). No build step.

const POLL_MS = 1500;
const CODE = /^[A-HJ-NP-Z2-9]{6}$/;

/** The room code in /class/CODE, or "". */
export function codeFromPath(path) {
  const code = (path.split("/")[2] || "").toUpperCase();
  return CODE.test(code) ? code : "";
}

/** The chosen words after a tap on word `i`: toggled; a third choice drops the oldest (at most two). */
export function toggleChoice(chosen, i) {
  if (chosen.includes(i)) return chosen.filter((j) => j !== i);
  return [...chosen, i].slice(-2);
}

const $ = (id) => document.getElementById(id);
const state = { code: "", token: "", index: -1, revealed: null, chosen: [], sent: null };

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
  poll();
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
      state.chosen = toggleChoice(state.chosen, i);
      renderWords(question, locked);
      box.children[i].focus();
      $("send").disabled = state.chosen.length === 0;
    });
    box.append(button);
  });
}

function renderReveal(question) {
  const bars = $("bars");
  bars.replaceChildren();
  $("reveal-head").textContent = question.head;
  question.words.forEach((word, i) => {
    const item = document.createElement("li");
    if (state.chosen.includes(i)) item.classList.add("guess");
    if (question.answers.includes(i)) item.classList.add("top");
    const label = Object.assign(document.createElement("span"), { className: "word", textContent: word });
    const bar = Object.assign(document.createElement("span"), { className: "bar" });
    const fill = document.createElement("span");
    fill.style.width = `${Math.round(question.weights[i] * 100)}%`;
    bar.append(fill);
    const value = Object.assign(document.createElement("span"), { textContent: `${Math.round(question.weights[i] * 100)}%` });
    item.append(label, bar, value);
    bars.append(item);
  });
  $("role").textContent = question.role;
  const hit = state.chosen.some((i) => question.answers.includes(i));
  $("status").textContent = state.chosen.length === 0 ? "You did not guess this one." :
    hit ? "Your guess matches the head's top word." : "The head looked elsewhere than you guessed.";
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
}

async function poll() {
  try {
    const view = await api("question");
    showError("");
    if (view.index !== state.index || view.revealed !== state.revealed || view.finished) render(view);
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

function start() {
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
