// The web chat page. It runs under a CSP without inline script: this file is
// its only code. Replies arrive on the chat's event stream; their html is
// rendered and sanitized by hermesd (goldmark + bluemonday) before it gets
// here, so it is inserted as is, and text is shown as text when there is
// no html.
"use strict";

const log = document.getElementById("log");
const form = document.getElementById("f");
const input = document.getElementById("t");
const send = document.getElementById("send");
const mic = document.getElementById("mic");
const attach = document.getElementById("attach");
const picker = document.getElementById("file");

function newChatID() {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return "browser-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

let chat = new URLSearchParams(location.search).get("chat") || localStorage.getItem("hermesd-chat");
if (!chat || !/^[A-Za-z0-9_-]{1,64}$/.test(chat)) {
  chat = newChatID();
}
localStorage.setItem("hermesd-chat", chat);
document.getElementById("who").textContent = "session web:dm:" + chat;
const base = "/api/chat/" + encodeURIComponent(chat);

function scrollDown() { log.scrollTop = log.scrollHeight; }

// bubble makes a message element; with before set it goes above that node
// (older history), else at the end.
function bubble(cls, before) {
  const d = document.createElement("div");
  d.className = "msg " + cls;
  if (before) {
    log.insertBefore(d, before);
  } else {
    log.insertBefore(d, thinking.parentNode === log ? thinking : null);
  }
  return d;
}

// fill shows text in d: the sanitized html when there is one, else text.
function fill(d, text, html) {
  d.replaceChildren();
  if (html) {
    const md = document.createElement("div");
    md.className = "md";
    md.innerHTML = html;
    addCopyButtons(md);
    d.appendChild(md);
    d.classList.remove("plain");
  } else {
    d.classList.add("plain");
    d.appendChild(document.createTextNode(text));
  }
}

function addCopyButtons(root) {
  root.querySelectorAll("pre").forEach((pre) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "copy";
    b.textContent = "copy";
    b.addEventListener("click", async () => {
      const code = pre.querySelector("code") || pre;
      try {
        await navigator.clipboard.writeText(code.textContent);
        b.textContent = "copied";
      } catch (err) {
        b.textContent = "copy failed";
      }
      setTimeout(() => { b.textContent = "copy"; }, 1500);
    });
    pre.appendChild(b);
  });
}

function add(cls, text) {
  const d = bubble(cls);
  fill(d, text, "");
  scrollDown();
  return d;
}

// Why a reply came without being asked for.
const origins = {cron: "reminder", background: "background result", review: "memory and skills review"};

function show(r, unprompted) {
  const d = bubble("bot" + (unprompted ? " unprompted" : ""));
  if (r.kind === "voice") {
    d.appendChild(document.createTextNode("🔊 voice reply (" + (r.duration_secs || 0).toFixed(1) + " s, " + r.format + ")"));
    const a = document.createElement("audio");
    a.controls = true;
    a.preload = "metadata";
    a.src = r.url;
    d.appendChild(a);
  } else {
    fill(d, r.text || "", r.html || "");
  }
  const label = origins[r.origin];
  if (label) {
    d.dataset.origin = r.origin;
    const o = document.createElement("span");
    o.className = "origin";
    o.textContent = label;
    d.prepend(o);
  }
  scrollDown();
  return d;
}

// The thinking indicator shows while a message of this page waits for its
// answer and no draft of it is visible yet.
const thinking = document.createElement("div");
thinking.className = "thinking";
thinking.textContent = "thinking";
let waiting = 0;
const drafts = new Map(); // draft id → bubble

function updateThinking() {
  if (waiting > 0 && drafts.size === 0) {
    if (thinking.parentNode !== log) {
      log.appendChild(thinking);
      scrollDown();
    }
  } else {
    thinking.remove();
  }
}

function showDraft(ev) {
  let d = drafts.get(ev.id);
  if (ev.cancelled) {
    if (d) d.remove();
    drafts.delete(ev.id);
    updateThinking();
    return;
  }
  if (!d) {
    d = bubble("bot draft");
    d.dataset.draft = ev.id;
    drafts.set(ev.id, d);
  }
  fill(d, ev.text || "", ev.html || "");
  if (ev.tool) {
    const t = document.createElement("div");
    t.className = "tool";
    t.textContent = "⚙️ running " + ev.tool + "…";
    d.appendChild(t);
  }
  updateThinking();
  scrollDown();
}

async function post(url, body, contentType) {
  waiting++;
  updateThinking();
  try {
    const res = await fetch(url, {method: "POST", headers: {"Content-Type": contentType}, body});
    const answer = await res.json().catch(() => ({}));
    if (!res.ok) {
      add("bot error", "⚠️ " + (answer.error ? answer.error.message : res.statusText));
    }
    return answer;
  } catch (err) {
    add("bot error", "⚠️ " + err);
    return {};
  } finally {
    waiting--;
    updateThinking();
  }
}

// Attachments: photos and documents go with the next message, as base64
// in the same JSON body (POST /api/chat's files); hermesd checks, stores
// and reads them.
attach.addEventListener("click", () => picker.click());
picker.addEventListener("change", () => {
  const n = picker.files.length;
  attach.textContent = n ? "📎" + n : "📎";
  attach.title = n ? Array.from(picker.files, (f) => f.name).join(", ") : "Attach photos or documents";
});

function base64Of(file) {
  return new Promise((resolve, reject) => {
    const r = new FileReader();
    r.onload = () => resolve(String(r.result).split(",", 2)[1] || "");
    r.onerror = () => reject(r.error);
    r.readAsDataURL(file);
  });
}

form.addEventListener("submit", async (e) => {
  e.preventDefault();
  const text = input.value.trim();
  const chosen = Array.from(picker.files);
  if (!text && chosen.length === 0) return;
  input.value = "";
  picker.value = "";
  attach.textContent = "📎";
  attach.title = "Attach photos or documents";
  const names = chosen.map((f) => "📎 " + f.name).join("\n");
  add("me", [text, names].filter(Boolean).join("\n"));
  send.disabled = true;
  try {
    const files = await Promise.all(chosen.map(async (f) => ({name: f.name, mime_type: f.type, data: await base64Of(f)})));
    await post("/api/chat", JSON.stringify(files.length ? {chat, text, files} : {chat, text}), "application/json");
  } catch (err) {
    add("bot error", "⚠️ could not read the file: " + err);
  } finally {
    send.disabled = false;
    input.focus();
  }
});

// History: the latest page when the page opens, older pages on demand.
const more = document.createElement("button");
more.id = "more";
more.type = "button";
more.textContent = "earlier messages";
let before = 0;

async function loadHistory() {
  const q = "?limit=50" + (before ? "&before=" + before : "");
  let page;
  try {
    const res = await fetch(base + "/history" + q);
    if (!res.ok) return;
    page = await res.json();
  } catch (err) {
    return;
  }
  const anchor = more.parentNode === log ? more.nextSibling : log.firstChild;
  for (const m of page.messages) {
    const d = bubble(m.role === "user" ? "me" : "bot", anchor);
    d.dataset.history = m.id;
    fill(d, m.text, m.role === "user" ? "" : m.html || "");
  }
  before = page.before || 0;
  if (before) {
    log.prepend(more);
  } else {
    more.remove();
  }
}
more.addEventListener("click", loadHistory);

const es = new EventSource(base + "/events");
es.addEventListener("reply", (e) => {
  const ev = JSON.parse(e.data);
  if (ev.draft && drafts.has(ev.draft)) {
    drafts.get(ev.draft).remove();
    drafts.delete(ev.draft);
  }
  const unprompted = !ev.answers || ev.answers.length === 0;
  ev.replies.forEach((r) => show(r, unprompted));
  updateThinking();
});
es.addEventListener("draft", (e) => showDraft(JSON.parse(e.data)));
es.onerror = () => {};

// The microphone: record while the button is on, then upload the
// recording as a voice message; its transcript is what the agent answers.
let recorder = null;

function recordingType() {
  for (const t of ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm"]) {
    if (window.MediaRecorder && MediaRecorder.isTypeSupported(t)) return t;
  }
  return "";
}

mic.addEventListener("click", async () => {
  if (recorder) {
    recorder.stop();
    return;
  }
  const type = recordingType();
  if (!type || !navigator.mediaDevices) {
    add("bot error", "⚠️ this browser cannot record audio");
    return;
  }
  let stream;
  try {
    stream = await navigator.mediaDevices.getUserMedia({audio: true});
  } catch (err) {
    add("bot error", "⚠️ no microphone: " + err.message);
    return;
  }
  const chunks = [];
  delete mic.dataset.bytes;
  recorder = new MediaRecorder(stream, {mimeType: type});
  let recorded = 0;
  recorder.addEventListener("dataavailable", (e) => {
    if (e.data.size > 0) chunks.push(e.data);
    recorded += e.data.size;
    mic.dataset.bytes = String(recorded); // how much is recorded so far
  });
  recorder.addEventListener("stop", async () => {
    stream.getTracks().forEach((t) => t.stop());
    recorder = null;
    mic.classList.remove("recording");
    mic.setAttribute("aria-pressed", "false");
    const blob = new Blob(chunks, {type: type.split(";")[0]});
    const me = add("me voice", "🎤 voice message…");
    const answer = await post(base + "/voice", blob, blob.type);
    if (answer.transcript) {
      fill(me, "🎤 " + answer.transcript, "");
    }
  });
  recorder.start(250); // a piece every 250 ms, so the size shows as it grows
  mic.classList.add("recording");
  mic.setAttribute("aria-pressed", "true");
});

loadHistory().then(() => {
  const n = document.createElement("div");
  n.className = "note";
  n.textContent = "Connected. Your conversation is kept by hermesd; /new starts over.";
  log.appendChild(n);
  scrollDown();
});
