// The front end of scripts/webapp.lua: the JSON API under /api, the
// session cookie the login form set, live updates from /api/events.
const $ = (id) => document.getElementById(id);

async function api(method, path, body) {
  const res = await fetch("/api" + path, {
    method,
    headers: body ? { "Content-Type": "application/json" } : {},
    body: body ? JSON.stringify(body) : undefined,
  });
  if (res.status === 401) { showLogin(); throw new Error("not logged in"); }
  return res.status === 204 ? null : res.json();
}

function showLogin() {
  $("login").hidden = false;
  $("app").hidden = true;
  $("login-error").hidden = !location.search.includes("error=login");
}

async function render() {
  const list = await api("GET", "/todos");
  $("list").replaceChildren(...list.map((todo) => {
    const li = document.createElement("li");
    li.className = todo.done ? "done" : "";
    const box = document.createElement("input");
    box.type = "checkbox";
    box.checked = todo.done;
    box.onchange = () => api("PATCH", "/todos/" + todo.id, { done: box.checked });
    const text = document.createElement("span");
    text.textContent = " " + todo.title + " (" + todo.by + ")";
    const del = document.createElement("button");
    del.textContent = "Delete";
    del.onclick = () => api("DELETE", "/todos/" + todo.id);
    li.append(box, text, del);
    return li;
  }));
}

async function start() {
  let me;
  try { me = await api("GET", "/me"); } catch (e) { return; }
  $("app").hidden = false;
  $("user").textContent = me.user;
  $("add").onsubmit = async (ev) => {
    ev.preventDefault();
    if ($("title").value) await api("POST", "/todos", { title: $("title").value });
    $("title").value = "";
  };
  $("upload").onsubmit = async (ev) => {
    ev.preventDefault();
    const res = await fetch("/api/uploads", { method: "POST", body: new FormData($("upload")) });
    $("uploaded").textContent = JSON.stringify(await res.json(), null, 2);
  };
  const events = new EventSource("/api/events");
  events.addEventListener("hello", () => { $("live").textContent = "Live updates on."; });
  events.addEventListener("changed", render);
  events.onerror = () => { $("live").textContent = "Live updates lost; reload the page."; };
  await render();
}

start();
