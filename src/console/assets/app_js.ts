// The console's script (served at /console/app.js).
// Plain text served as is: no backquote or dollar-brace may appear in it.
export const APP_JS = String.raw`
// The web console: a small single-page application over the console API. Every storage request
// goes to /console/api/s3/... (the protocol, answered as the signed-in user), administration to
// /console/api/admin/... . No framework: DOM built with el(), text always set as text.
"use strict";

const PAGE_SIZE = 100;
const SINGLE_PUT_MAX = 16 * 1024 * 1024;
const PART_SIZE = 8 * 1024 * 1024;
const PART_TRIES = 4;
const state = { session: null, ldap: false, keepNotice: false };

// ---------- DOM helpers ----------

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (name === "text") node.textContent = value;
    else if (name === "class") node.className = value;
    else if (value === true) node.setAttribute(name, "");
    else node.setAttribute(name, String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const main = () => document.getElementById("main");

function show(title, ...content) {
  document.title = title + " · Console";
  const m = main();
  m.replaceChildren(el("h1", { text: title }), ...content.filter((c) => c !== null));
  m.focus();
}

function clearNotices() {
  for (const id of ["alert", "status"]) {
    document.getElementById(id).textContent = "";
    document.getElementById(id).className = "notice";
  }
}

/** A message for assistive technology and eyes: polite for news, an alert for refusals. */
function notify(text, kind) {
  clearNotices();
  const box = document.getElementById(kind === "error" ? "alert" : "status");
  box.className = kind === "error" ? "notice error" : "notice ok";
  box.textContent = text;
  clearTimeout(notify.timer);
  notify.timer = setTimeout(() => {
    box.textContent = "";
    box.className = "notice";
  }, kind === "error" ? 15000 : 6000);
}

function formatSize(bytes) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = bytes;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? bytes + " B" : v.toFixed(v < 10 ? 1 : 0) + " " + units[u];
}

function formatDate(iso, seconds) {
  const text = iso ? new Date(iso).toISOString().slice(0, seconds ? 19 : 16) : "";
  return text ? text.replace("T", " ") + " UTC" : "";
}

function encodeKey(key) {
  return key.split("/").map(encodeURIComponent).join("/");
}

function basename(key) {
  const trimmed = key.endsWith("/") ? key.slice(0, -1) : key;
  return trimmed.slice(trimmed.lastIndexOf("/") + 1) + (key.endsWith("/") ? "/" : "");
}

/** A modal question answered with its buttons or Escape; resolves true for the confirm button. */
function ask(question, confirmText) {
  return new Promise((resolve) => {
    const dialog = el("dialog", { class: "confirm", "aria-labelledby": "ask-text" });
    const done = (answer) => {
      dialog.close();
      dialog.remove();
      resolve(answer);
    };
    dialog.append(
      el("p", { id: "ask-text", text: question }),
      el(
        "div",
        { class: "row" },
        el("button", { type: "button", class: "danger", onclick: () => done(true) }, confirmText),
        el("button", { type: "button", onclick: () => done(false) }, "Cancel"),
      ),
    );
    dialog.addEventListener("cancel", () => done(false));
    document.body.append(dialog);
    dialog.showModal();
  });
}

// ---------- requests ----------

class ApiFailure extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

/** The error of a failed answer, from the protocol's XML or the API's JSON. */
async function failureOf(res) {
  const text = await res.text().catch(() => "");
  let code = "";
  let message = "";
  if (text.startsWith("<")) {
    const doc = new DOMParser().parseFromString(text, "application/xml");
    code = doc.querySelector("Error > Code")?.textContent || "";
    message = doc.querySelector("Error > Message")?.textContent || "";
  } else if (text.startsWith("{")) {
    try {
      const body = JSON.parse(text);
      code = body.error?.code || "";
      message = body.error?.message || "";
    } catch { /* not JSON after all */ }
  }
  if (code === "AccessDenied" || (res.status === 403 && !message)) {
    const detail = message && message !== "Access Denied" ? " " + message : "";
    message = "Access denied: your access does not allow this." + detail;
  }

  return new ApiFailure(res.status, code, message || ("The server answered " + res.status + "."));
}

function csrfHeaders(method, headers) {
  const out = new Headers(headers || {});
  if (method !== "GET" && method !== "HEAD" && state.session) {
    out.set("x-console-csrf", state.session.csrf);
  }
  return out;
}

async function request(method, path, opts) {
  const o = opts || {};
  const res = await fetch(path, {
    method,
    headers: csrfHeaders(method, o.headers),
    body: o.body,
    credentials: "same-origin",
  });
  if (res.status === 401 && path !== "/console/api/sign-in") {
    const failure = await failureOf(res);
    if (failure.code === "session_expired") {
      state.session = null;
      signInView("Your session ended; sign in again.");
      throw failure;
    }
    throw failure;
  }
  if (!res.ok && !o.allow?.includes(res.status)) throw await failureOf(res);
  return res;
}

function s3(method, path, opts) {
  return request(method, "/console/api/s3" + path, opts);
}

async function s3Xml(method, path, opts) {
  const res = await s3(method, path, opts);
  const text = await res.text();
  return new DOMParser().parseFromString(text, "application/xml");
}

async function adminJson(method, path, body) {
  const res = await request(method, "/console/api/admin" + path, {
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.status === 204 ? null : await res.json();
}

function text(node, tag) {
  return node.getElementsByTagName(tag)[0]?.textContent ?? "";
}

/** CRC-32 of a UTF-8 text as base64, the integrity header some documents must carry. */
function crc32Base64(textBody) {
  let crc = -1;
  for (const byte of new TextEncoder().encode(textBody)) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1));
  }
  crc = (crc ^ -1) >>> 0;
  return btoa(String.fromCharCode(crc >>> 24, (crc >>> 16) & 255, (crc >>> 8) & 255, crc & 255));
}

function xmlEscape(s) {
  return s.replace(/[<>&'"]/g, (c) => "&#" + c.charCodeAt(0) + ";");
}

/** Runs an action, reporting its failure as an alert; true when it succeeded. */
async function attempt(action, done) {
  try {
    await action();
    if (done) notify(done, "ok");
    return true;
  } catch (err) {
    if (err.code !== "session_expired") notify(err.message || String(err), "error");
    return false;
  }
}

// ---------- frame and routing ----------

function renderFrame() {
  const nav = document.getElementById("nav");
  const s = state.session;
  if (!s) {
    nav.replaceChildren();
    return;
  }
  const links = [["#/buckets", "Buckets"], ["#/shares", "Shares"]];
  if (s.kind === "admin") {
    links.push(["#/users", "Users"]);
    if (state.ldap) links.push(["#/directory", "Directory"]);
    links.push(
      ["#/audit", "Audit log"],
      ["#/errors", "Errors"],
      ["#/health", "Drives"],
      ["#/notify", "Notifications"],
      ["#/metrics", "Metrics"],
    );
  }
  nav.replaceChildren(
    el("ul", {}, links.map(([href, label]) => el("li", {}, el("a", { href }, label)))),
    el(
      "div",
      { class: "who" },
      el("span", { "aria-label": "Signed in as" }, s.user + (s.kind === "admin" ? " (admin)" : "")),
      el("button", { type: "button", id: "sign-out", onclick: signOut }, "Sign out"),
    ),
  );
  for (const a of nav.querySelectorAll("a")) {
    if (location.hash.startsWith(a.getAttribute("href"))) a.setAttribute("aria-current", "page");
  }
}

function parseHash() {
  const raw = location.hash.slice(1) || "/buckets";
  const q = raw.indexOf("?");
  const path = q < 0 ? raw : raw.slice(0, q);
  const params = new URLSearchParams(q < 0 ? "" : raw.slice(q + 1));
  return { parts: path.split("/").filter(Boolean).map(decodeURIComponent), params };
}

function route() {
  if (!state.session) return signInView();
  renderFrame();
  const { parts, params } = parseHash();
  const [screen, bucket] = parts;
  if (screen === "b" && bucket) return objectsView(bucket, params);
  if (screen === "o" && bucket) return objectView(bucket, params.get("key") || "");
  if (screen === "settings" && bucket) return bucketSettingsView(bucket);
  if (screen === "users") return usersView();
  if (screen === "shares") return sharesView();
  if (screen === "directory") return directoryView();
  if (screen === "notify") return notifyView();
  if (screen === "metrics") return metricsView();
  if (screen === "audit") return auditView(params);
  if (screen === "errors") return errorsView(params);
  if (screen === "health") return healthView();
  return bucketsView();
}

/** Opens a screen as the result of an action: the action's message stays. */
function go(hash) {
  if (location.hash === hash) return route();
  state.keepNotice = true;
  location.hash = hash;
}

// ---------- sign-in ----------

function signInView(message) {
  renderFrame();
  const method = el("fieldset", { class: "methods" }, el("legend", {}, "Sign in with"));
  const field = (id, label, type, autocomplete) =>
    el(
      "p",
      {},
      el("label", { for: id, id: id + "-label" }, label),
      el("input", { id, name: id, type, required: true, autocomplete, spellcheck: "false" }),
    );
  const nameField = field("name", "Access key", "text", "username");
  const secretField = field("secret", "Secret key", "password", "current-password");
  const setMethod = (m) => {
    document.getElementById("name-label").textContent = m === "ldap" ? "User name" : "Access key";
    document.getElementById("secret-label").textContent = m === "ldap" ? "Password" : "Secret key";
  };
  for (const [value, label] of [["key", "Access key"], ["ldap", "Directory (LDAP)"]]) {
    if (value === "ldap" && !state.ldap) continue;
    method.append(el(
      "label",
      { class: "inline" },
      el("input", {
        type: "radio",
        name: "method",
        value,
        checked: value === "key",
        onchange: () => setMethod(value),
      }),
      " " + label,
    ));
  }
  const form = el(
    "form",
    { id: "sign-in", class: "card narrow" },
    state.ldap ? method : null,
    nameField,
    secretField,
    el("button", { type: "submit", class: "primary" }, "Sign in"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const data = new FormData(form);
    const ldap = data.get("method") === "ldap";
    const body = ldap
      ? { method: "ldap", username: data.get("name"), password: data.get("secret") }
      : { method: "key", access_key: data.get("name"), secret_key: data.get("secret") };
    try {
      const res = await request("POST", "/console/api/sign-in", {
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      state.session = await res.json();
      notify("Signed in as " + state.session.user + ".", "ok");
      if (!location.hash || location.hash === "#/") go("#/buckets");
      else route();
    } catch (err) {
      notify(err.message, "error");
    }
  });
  show(
    "Sign in",
    message ? el("p", { class: "notice error", role: "alert" }, message) : null,
    form,
  );
  document.getElementById("name").focus();
}

async function signOut() {
  await attempt(() => request("POST", "/console/api/sign-out"));
  state.session = null;
  history.replaceState(null, "", "#/");
  signInView("You have signed out.");
}

// ---------- buckets ----------

async function bucketsView() {
  const nameInput = el("input", {
    id: "new-bucket",
    name: "bucket",
    required: true,
    pattern: "[a-z0-9][a-z0-9.\\-]{1,61}[a-z0-9]",
    title: "3-63 lower-case letters, digits, dots and hyphens",
    autocomplete: "off",
  });
  const form = el(
    "form",
    { class: "row card" },
    el("label", { for: "new-bucket" }, "New bucket"),
    nameInput,
    el(
      "label",
      { class: "inline" },
      el("input", { type: "checkbox", id: "new-bucket-lock" }),
      " with Object Lock (implies versioning; cannot be turned off)",
    ),
    el("button", { type: "submit" }, "Create bucket"),
  );
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const name = nameInput.value.trim();
    const locked = document.getElementById("new-bucket-lock").checked;
    const headers = locked ? { "x-amz-bucket-object-lock-enabled": "true" } : {};
    if (
      await attempt(
        () => s3("PUT", "/" + encodeURIComponent(name), { headers }),
        "Bucket " + name + " created.",
      )
    ) {
      bucketsView();
    }
  });
  const list = el("div", { class: "table-wrap" }, el("p", { text: "Loading…" }));
  show("Buckets", form, list);
  let buckets;
  try {
    buckets = (await (await request("GET", "/console/api/buckets")).json()).buckets;
  } catch (err) {
    list.replaceChildren(el("p", { class: "notice error", role: "alert" }, err.message));
    return;
  }
  if (buckets.length === 0) {
    list.replaceChildren(el("p", { id: "no-buckets" }, "No buckets you may see yet."));
    return;
  }
  list.replaceChildren(el(
    "table",
    { id: "buckets" },
    el("caption", { class: "sr-only" }, "Buckets"),
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        el("th", { scope: "col" }, "Name"),
        el("th", { scope: "col" }, "Your access"),
        el("th", { scope: "col" }, "Created"),
        el("th", { scope: "col" }, "Actions"),
      ),
    ),
    el(
      "tbody",
      {},
      buckets.map((b) =>
        el(
          "tr",
          {},
          el("td", {}, el("a", { href: "#/b/" + encodeURIComponent(b.name) }, b.name)),
          el("td", {}, b.access),
          el("td", {}, formatDate(b.created)),
          el(
            "td",
            { class: "actions" },
            el(
              "a",
              { href: "#/settings/" + encodeURIComponent(b.name), class: "button" },
              "Settings",
            ),
            el("button", {
              type: "button",
              class: "danger",
              "aria-label": "Delete bucket " + b.name,
              onclick: async () => {
                if (!(await ask("Delete the bucket " + b.name + "? It must be empty.", "Delete"))) {
                  return;
                }
                const ok = await attempt(
                  () => s3("DELETE", "/" + encodeURIComponent(b.name)),
                  "Bucket " + b.name + " deleted.",
                );
                if (ok) bucketsView();
              },
            }, "Delete"),
          ),
        )
      ),
    ),
  ));
}

// ---------- objects ----------

function objectsHash(bucket, prefix, search) {
  const p = new URLSearchParams();
  if (prefix) p.set("prefix", prefix);
  if (search) p.set("q", search);
  const q = p.toString();
  return "#/b/" + encodeURIComponent(bucket) + (q ? "?" + q : "");
}

function breadcrumbs(bucket, prefix) {
  const nav = el("nav", { "aria-label": "Folder", class: "crumbs" });
  nav.append(el("a", { href: "#/buckets" }, "Buckets"), " / ");
  nav.append(el("a", { href: objectsHash(bucket, "") }, bucket));
  let acc = "";
  for (const part of prefix.split("/").filter(Boolean)) {
    acc += part + "/";
    nav.append(" / ", el("a", { href: objectsHash(bucket, acc) }, part));
  }
  return nav;
}

async function objectsView(bucket, params) {
  const prefix = params.get("prefix") || "";
  const search = params.get("q") || "";
  const tokens = [""];
  const searchInput = el("input", {
    id: "search",
    type: "search",
    value: search,
    placeholder: "Name starts with…",
    autocomplete: "off",
  });
  const searchForm = el(
    "form",
    { class: "row", role: "search" },
    el("label", { for: "search" }, "Search this folder"),
    searchInput,
    el("button", { type: "submit" }, "Search"),
  );
  searchForm.addEventListener("submit", (event) => {
    event.preventDefault();
    go(objectsHash(bucket, prefix, searchInput.value));
  });
  const uploads = el("ul", { id: "uploads", class: "uploads", "aria-label": "Uploads" });
  const fileInput = el("input", {
    id: "upload-files",
    type: "file",
    multiple: true,
    class: "sr-only",
  });
  const folderInput = el("input", {
    id: "upload-folder",
    type: "file",
    webkitdirectory: true,
    class: "sr-only",
  });
  /** Uploads items, each a file and its path under the folder; then the listing is read again. */
  const startUploads = (items) => {
    uploadAll(bucket, prefix, items, uploads).then(() => loadPage());
  };
  const asItems = (files) =>
    [...files].map((file) => ({ file, path: file.webkitRelativePath || file.name }));
  // Emptied after each choice, so choosing the same file again (to resume it) is a change.
  for (const picker of [fileInput, folderInput]) {
    picker.addEventListener("change", () => {
      const files = [...picker.files];
      picker.value = "";
      startUploads(asItems(files));
    });
  }
  const drop = el(
    "div",
    { class: "drop card", id: "drop" },
    el("span", {}, "Drop files here, or "),
    fileInput,
    el("label", { for: "upload-files", class: "button" }, "Choose files"),
    " ",
    folderInput,
    el("label", { for: "upload-folder", class: "button" }, "Choose a folder"),
  );
  drop.addEventListener("dragover", (e) => {
    e.preventDefault();
    drop.classList.add("over");
  });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    // Folders dropped come as directory entries, read while the event lasts, walked after.
    const entries = [...(e.dataTransfer.items || [])]
      .map((item) => item.webkitGetAsEntry && item.webkitGetAsEntry())
      .filter(Boolean);
    if (entries.some((entry) => entry.isDirectory)) {
      droppedFiles(entries).then(startUploads, (err) => notify(err.message, "error"));
    } else {
      startUploads(asItems(e.dataTransfer.files));
    }
  });
  const deleteButton = el("button", {
    type: "button",
    id: "delete-selected",
    class: "danger",
    disabled: true,
    onclick: () => deleteSelected(bucket, table, loadPage),
  }, "Delete selected");
  const folderForm = el(
    "form",
    { class: "row" },
    el("label", { for: "new-folder" }, "New folder"),
    el("input", { id: "new-folder", required: true, autocomplete: "off" }),
    el("button", { type: "submit" }, "Create folder"),
  );
  folderForm.addEventListener("submit", async (e) => {
    e.preventDefault();
    const name = document.getElementById("new-folder").value.replace(/\/+$/, "");
    const key = prefix + name + "/";
    const ok = await attempt(
      () => s3("PUT", "/" + encodeURIComponent(bucket) + "/" + encodeKey(key), { body: "" }),
      "Folder " + name + " created.",
    );
    if (ok) go(objectsHash(bucket, key));
  });
  const table = el("div", { class: "table-wrap", id: "listing" });
  const pager = el("div", { class: "row pager" });
  show(
    bucket,
    breadcrumbs(bucket, prefix),
    el("div", { class: "toolbar" }, searchForm, folderForm),
    drop,
    uploads,
    el(
      "div",
      { class: "row" },
      deleteButton,
      el("a", {
        class: "button",
        href: "#/settings/" + encodeURIComponent(bucket),
      }, "Bucket settings"),
    ),
    table,
    pager,
    shareForm(bucket, prefix),
  );
  document.title = bucket + "/" + prefix + " · Console";
  let page = 0;
  async function loadPage() {
    const q = new URLSearchParams({
      "list-type": "2",
      delimiter: "/",
      "max-keys": String(PAGE_SIZE),
      prefix: prefix + search,
    });
    if (tokens[page]) q.set("continuation-token", tokens[page]);
    table.setAttribute("aria-busy", "true");
    let doc;
    try {
      doc = await s3Xml("GET", "/" + encodeURIComponent(bucket) + "?" + q);
    } catch (err) {
      table.replaceChildren(el("p", { class: "notice error", role: "alert" }, err.message));
      pager.replaceChildren();
      return;
    } finally {
      table.removeAttribute("aria-busy");
    }
    const folders = [...doc.getElementsByTagName("CommonPrefixes")].map((p) => text(p, "Prefix"));
    const objects = [...doc.getElementsByTagName("Contents")].map((c) => ({
      key: text(c, "Key"),
      size: Number(text(c, "Size")),
      modified: text(c, "LastModified"),
    })).filter((o) => o.key !== prefix);
    const next = text(doc, "NextContinuationToken");
    tokens[page + 1] = next;
    renderListing(bucket, table, folders, objects, deleteButton);
    pager.replaceChildren(
      el("button", {
        type: "button",
        disabled: page === 0,
        onclick: () => {
          page--;
          loadPage();
        },
      }, "Previous page"),
      el("span", {}, "Page " + (page + 1)),
      el("button", {
        type: "button",
        id: "next-page",
        disabled: !next,
        onclick: () => {
          page++;
          loadPage();
        },
      }, "Next page"),
    );
  }
  await loadPage();
}

function renderListing(bucket, table, folders, objects, deleteButton) {
  if (folders.length === 0 && objects.length === 0) {
    table.replaceChildren(el("p", { id: "empty" }, "Nothing here."));
    deleteButton.disabled = true;
    return;
  }
  const update = () => {
    deleteButton.disabled = table.querySelectorAll("input.pick:checked").length === 0;
  };
  const rows = [
    ...folders.map((f) =>
      el(
        "tr",
        { class: "folder" },
        el("td", {}, ""),
        el("td", {}, el("a", { href: objectsHash(bucket, f) }, basename(f))),
        el("td", {}, "folder"),
        el("td", {}, ""),
      )
    ),
    ...objects.map((o) =>
      el(
        "tr",
        { class: "file" },
        el(
          "td",
          {},
          el("input", {
            type: "checkbox",
            class: "pick",
            value: o.key,
            "aria-label": "Select " + basename(o.key),
            onchange: update,
          }),
        ),
        el(
          "td",
          {},
          el("a", {
            href: "#/o/" + encodeURIComponent(bucket) + "?key=" + encodeURIComponent(o.key),
          }, basename(o.key)),
        ),
        el("td", {}, formatSize(o.size)),
        el("td", {}, formatDate(o.modified)),
      )
    ),
  ];
  table.replaceChildren(el(
    "table",
    { id: "objects" },
    el("caption", { class: "sr-only" }, "Folders and objects"),
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        el("th", { scope: "col" }, el("span", { class: "sr-only" }, "Select")),
        el("th", { scope: "col" }, "Name"),
        el("th", { scope: "col" }, "Size"),
        el("th", { scope: "col" }, "Modified"),
      ),
    ),
    el("tbody", {}, rows),
  ));
  update();
}

async function deleteSelected(bucket, table, reload) {
  const keys = [...table.querySelectorAll("input.pick:checked")].map((i) => i.value);
  if (keys.length === 0) return;
  if (!(await ask("Delete " + keys.length + " object(s)?", "Delete"))) return;
  const body = "<Delete><Quiet>true</Quiet>" +
    keys.map((k) => "<Object><Key>" + xmlEscape(k) + "</Key></Object>").join("") + "</Delete>";
  await attempt(async () => {
    const doc = await s3Xml("POST", "/" + encodeURIComponent(bucket) + "?delete", {
      headers: { "content-type": "application/xml", "x-amz-checksum-crc32": crc32Base64(body) },
      body,
    });
    const errors = [...doc.getElementsByTagName("Error")];
    if (errors.length > 0) {
      throw new Error(
        "Not deleted: " +
          errors.map((e) => text(e, "Key") + " (" + text(e, "Message") + ")").join(", "),
      );
    }
  }, keys.length + " object(s) deleted.");
  reload();
}

// ---------- uploads ----------

/** One XHR PUT with progress; resolves with the response's ETag. */
function putWithProgress(url, body, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("PUT", url);
    xhr.setRequestHeader("x-console-csrf", state.session.csrf);
    xhr.upload.onprogress = (e) => onProgress(e.loaded);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.getResponseHeader("etag") || "");
      else {
        const res = new Response(xhr.responseText, { status: xhr.status });
        failureOf(res).then(reject);
      }
    };
    xhr.onerror = () => reject(new ApiFailure(0, "network", "The connection dropped."));
    xhr.send(body);
  });
}

/** Every file under dropped entries, with its path from the dropped folder's name down. */
async function droppedFiles(entries) {
  const out = [];
  const walk = async (entry) => {
    if (entry.isFile) {
      const file = await new Promise((resolve, reject) => entry.file(resolve, reject));
      out.push({ file, path: entry.fullPath.replace(/^\//, "") });
      return;
    }
    const reader = entry.createReader();
    // readEntries answers in batches until it answers none.
    for (;;) {
      const batch = await new Promise((resolve, reject) => reader.readEntries(resolve, reject));
      if (batch.length === 0) return;
      for (const child of batch) await walk(child);
    }
  };
  for (const entry of entries) await walk(entry);
  return out;
}

async function uploadAll(bucket, prefix, items, list) {
  for (const { file, path } of items) {
    const key = prefix + path;
    const bar = el("progress", { max: file.size || 1, value: 0, "aria-label": "Upload of " + key });
    const label = el("span", { class: "state" }, "waiting");
    const item = el("li", {}, el("span", { class: "name" }, key), bar, label);
    list.append(item);
    const progress = (done) => {
      bar.value = done;
      label.textContent = Math.floor((done / (file.size || 1)) * 100) + "%";
    };
    try {
      if (file.size <= SINGLE_PUT_MAX) {
        await putWithProgress(
          "/console/api/s3/" + encodeURIComponent(bucket) + "/" + encodeKey(key),
          file,
          progress,
        );
      } else {
        await multipartUpload(bucket, key, file, progress, label);
      }
      progress(file.size || 1);
      label.textContent = "done";
      item.classList.add("done");
    } catch (err) {
      label.textContent = "failed: " + err.message;
      item.classList.add("failed");
      notify("Upload of " + key + " failed: " + err.message, "error");
    }
  }
}

/** Where an unfinished multipart upload of this very file (name, size, date) is remembered. */
function resumeKey(bucket, key, file) {
  return "console-upload:" + bucket + "/" + key + ":" + file.size + ":" + file.lastModified;
}

/** The parts the server holds for an upload, by number; undefined when the upload is gone. */
async function uploadedParts(path, uploadId) {
  const parts = new Map();
  let marker = "";
  for (;;) {
    const res = await s3(
      "GET",
      path + "?uploadId=" + encodeURIComponent(uploadId) +
        (marker ? "&part-number-marker=" + marker : ""),
      { allow: [404] },
    );
    if (res.status === 404) return undefined;
    const doc = new DOMParser().parseFromString(await res.text(), "application/xml");
    for (const p of doc.getElementsByTagName("Part")) {
      parts.set(Number(text(p, "PartNumber")), {
        etag: text(p, "ETag"),
        size: Number(text(p, "Size")),
      });
    }
    if (text(doc, "IsTruncated") !== "true") return parts;
    marker = text(doc, "NextPartNumberMarker");
  }
}

/**
 * Large files in parts. A part whose connection drops is sent again (PART_TRIES times); if the
 * connection stays down the upload is kept, and choosing the same file again later (even after
 * the page was closed) sends only the parts the server does not hold yet.
 */
async function multipartUpload(bucket, key, file, progress, label) {
  const path = "/" + encodeURIComponent(bucket) + "/" + encodeKey(key);
  // At most 10,000 parts: large files get larger parts (whole MiB).
  const partSize = Math.max(PART_SIZE, Math.ceil(file.size / 10000 / 1048576) * 1048576);
  const remembered = resumeKey(bucket, key, file);
  let uploadId = localStorage.getItem(remembered);
  let held = uploadId ? await uploadedParts(path, uploadId) : undefined;
  if (!held) {
    const doc = await s3Xml("POST", path + "?uploads");
    uploadId = text(doc, "UploadId");
    held = new Map();
    localStorage.setItem(remembered, uploadId);
  } else if (held.size > 0) {
    label.textContent = "resuming: " + held.size + " part(s) already uploaded";
  }
  const query = (n) => "?partNumber=" + n + "&uploadId=" + encodeURIComponent(uploadId);
  const parts = [];
  let sent = 0;
  try {
    for (let n = 1, offset = 0; offset < file.size; n++, offset += partSize) {
      const blob = file.slice(offset, Math.min(file.size, offset + partSize));
      let etag = held.get(n)?.size === blob.size ? held.get(n).etag : undefined;
      for (let attemptNo = 1; etag === undefined; attemptNo++) {
        try {
          etag = await putWithProgress(
            "/console/api/s3" + path + query(n),
            blob,
            (done) => progress(sent + done),
          );
        } catch (err) {
          if (attemptNo >= PART_TRIES || err.status >= 400) throw err;
          label.textContent = "connection dropped, retrying part " + n;
          await new Promise((r) => setTimeout(r, 1000 * attemptNo));
        }
      }
      sent += blob.size;
      progress(sent);
      parts.push(
        "<Part><PartNumber>" + n + "</PartNumber><ETag>" + xmlEscape(etag) + "</ETag></Part>",
      );
    }
    await s3("POST", path + "?uploadId=" + encodeURIComponent(uploadId), {
      headers: { "content-type": "application/xml" },
      body: "<CompleteMultipartUpload>" + parts.join("") + "</CompleteMultipartUpload>",
    });
    localStorage.removeItem(remembered);
  } catch (err) {
    if (err.code === "network") {
      throw new ApiFailure(
        0,
        "network",
        "The connection dropped; choose the same file again to resume.",
      );
    }
    localStorage.removeItem(remembered);
    await s3("DELETE", path + "?uploadId=" + encodeURIComponent(uploadId)).catch(() => {});
    throw err;
  }
}

// ---------- one object ----------

async function objectView(bucket, key) {
  const path = "/" + encodeURIComponent(bucket) + "/" + encodeKey(key);
  const folder = key.includes("/") ? key.slice(0, key.lastIndexOf("/") + 1) : "";
  show(basename(key), breadcrumbs(bucket, folder));
  document.title = key + " · Console";
  let head;
  try {
    head = await s3("HEAD", path);
  } catch (err) {
    main().append(el("p", { class: "notice error", role: "alert" }, err.message));
    return;
  }
  const h = head.headers;
  const size = Number(h.get("content-length"));
  const type = h.get("content-type") || "";
  const meta = [];
  h.forEach((value, name) => {
    if (name.startsWith("x-amz-meta-")) meta.push([name.slice(11), value]);
  });
  const facts = [
    ["Size", formatSize(size)],
    ["Type", type],
    ["Modified", h.get("last-modified") || ""],
    ["ETag", h.get("etag") || ""],
    ["Version", h.get("x-amz-version-id") || "none"],
    ...meta.map(([k, v]) => ["Metadata " + k, v]),
  ];
  const details = el(
    "dl",
    { class: "facts", id: "facts" },
    facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)]),
  );
  const actions = el(
    "div",
    { class: "row" },
    el("a", {
      class: "button primary",
      href: "/console/api/s3" + path,
      download: basename(key),
      id: "download",
    }, "Download"),
    el("button", {
      type: "button",
      class: "danger",
      onclick: async () => {
        if (!(await ask("Delete " + key + "?", "Delete"))) return;
        if (await attempt(() => s3("DELETE", path), key + " deleted.")) {
          go(objectsHash(bucket, folder));
        }
      },
    }, "Delete"),
  );
  const previewBox = el(
    "section",
    { "aria-labelledby": "preview-h", id: "preview" },
    el("h2", { id: "preview-h" }, "Preview"),
  );
  const tagsBox = el(
    "section",
    { "aria-labelledby": "tags-h", id: "tags" },
    el("h2", { id: "tags-h" }, "Tags"),
  );
  const linkBox = el(
    "section",
    { "aria-labelledby": "link-h", id: "link" },
    el("h2", { id: "link-h" }, "Share a link"),
  );
  const versionsBox = el(
    "section",
    { "aria-labelledby": "versions-h", id: "versions" },
    el("h2", { id: "versions-h" }, "Versions"),
  );
  const metaBox = el(
    "section",
    { "aria-labelledby": "meta-h", id: "metadata" },
    el("h2", { id: "meta-h" }, "Metadata"),
  );
  main().append(details, actions, previewBox, linkBox, metaBox, tagsBox, versionsBox);
  preview(path, type, size, previewBox);
  presignForm(bucket, key, linkBox);
  metadataEditor(bucket, key, h, meta, metaBox);
  tagsEditor(path, tagsBox);
  versionsList(bucket, key, versionsBox);
}

/** Headers a metadata change keeps as they are (a REPLACE copy would drop them). */
const KEPT_HEADERS = [
  "cache-control",
  "content-disposition",
  "content-encoding",
  "content-language",
  "expires",
];

/** What is wrong with metadata lines (key=value), or "" when nothing is. */
function metadataProblem(lines) {
  const keys = new Set();
  let bytes = 0;
  for (const line of lines) {
    const eq = line.indexOf("=");
    const key = (eq < 0 ? line : line.slice(0, eq)).trim().toLowerCase();
    const value = eq < 0 ? "" : line.slice(eq + 1).trim();
    if (!/^[a-z0-9._-]+$/.test(key)) {
      return "the key " + (key || "(empty)") + " may hold only letters, digits, . _ and -";
    }
    if (!/^[\x20-\x7e]*$/.test(value)) return "the value of " + key + " is not plain ASCII";
    if (keys.has(key)) return "the key " + key + " is given twice";
    keys.add(key);
    bytes += key.length + value.length;
  }
  return bytes > 2048 ? "metadata is limited to 2 KiB" : "";
}

/**
 * The object's type and user metadata, changed by copying the object onto itself with the new
 * metadata (a CopyObject with REPLACE: a new version when versioning is on; tags are kept).
 */
function metadataEditor(bucket, key, headers, meta, box) {
  const path = "/" + encodeURIComponent(bucket) + "/" + encodeKey(key);
  const typeInput = el("input", {
    id: "meta-type",
    value: headers.get("content-type") || "",
    autocomplete: "off",
    spellcheck: "false",
  });
  const area = el(
    "textarea",
    { id: "meta-text", rows: 3, spellcheck: "false" },
    meta.map(([k, v]) => k + "=" + v).join("\n"),
  );
  const problem = el("p", { id: "meta-problem", "aria-live": "polite" });
  const form = el(
    "form",
    { id: "meta-form" },
    el("p", {}, el("label", { for: "meta-type" }, "Content type"), typeInput),
    el("label", { for: "meta-text" }, "User metadata (x-amz-meta-*), one a line, key=value"),
    area,
    problem,
    el("button", { type: "submit", id: "meta-save" }, "Save metadata"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const lines = area.value.split("\n").map((l) => l.trim()).filter(Boolean);
    const wrong = metadataProblem(lines) ||
      (/^[\x20-\x7e]*$/.test(typeInput.value) ? "" : "the content type is not plain ASCII");
    if (wrong) {
      problem.textContent = "Not saved: " + wrong + ".";
      problem.className = "notice error";
      return;
    }
    const out = {
      "x-amz-copy-source": path,
      "x-amz-metadata-directive": "REPLACE",
    };
    if (typeInput.value.trim()) out["content-type"] = typeInput.value.trim();
    for (const name of KEPT_HEADERS) {
      if (headers.get(name)) out[name] = headers.get(name);
    }
    for (const line of lines) {
      const eq = line.indexOf("=");
      const k = (eq < 0 ? line : line.slice(0, eq)).trim().toLowerCase();
      out["x-amz-meta-" + k] = eq < 0 ? "" : line.slice(eq + 1).trim();
    }
    const ok = await attempt(() => s3("PUT", path, { headers: out }), "Metadata saved.");
    if (ok) objectView(bucket, key);
  });
  box.append(form);
}

async function preview(path, type, size, box) {
  const isImage = /^image\/(png|jpeg|gif|webp|avif|bmp)$/.test(type);
  const isText = /^text\/|json|xml|yaml|csv|javascript/.test(type);
  if (isImage && size <= 20 * 1024 * 1024) {
    const res = await s3("GET", path).catch(() => null);
    if (!res) return box.append(el("p", {}, "The preview could not be read."));
    const url = URL.createObjectURL(await res.blob());
    box.append(el("img", { src: url, alt: "Preview of the image", class: "preview" }));
  } else if (isText || size === 0) {
    const res = await s3("GET", path, { headers: { range: "bytes=0-65535" }, allow: [416] })
      .catch(() => null);
    if (!res) return box.append(el("p", {}, "The preview could not be read."));
    const body = res.status === 416 ? "" : await res.text();
    box.append(el("pre", { class: "preview", tabindex: "0" }, body + (size > 65536 ? "\n…" : "")));
  } else {
    box.append(el("p", {}, "No preview for this type (" + (type || "unknown") + ")."));
  }
}

function presignForm(bucket, key, box) {
  const choices = [[900, "15 minutes"], [3600, "1 hour"], [86400, "1 day"], [604800, "7 days"]];
  const select = el(
    "select",
    { id: "expiry" },
    choices.map(([s, label]) => el("option", { value: s, selected: s === 3600 }, label)),
  );
  const out = el("input", { id: "link-url", readonly: true, "aria-label": "Link", class: "wide" });
  const form = el(
    "form",
    { class: "row" },
    el("label", { for: "expiry" }, "Valid for"),
    select,
    el("button", { type: "submit" }, "Make link"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    await attempt(async () => {
      const res = await request("POST", "/console/api/presign", {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ bucket, key, expires_in: Number(select.value) }),
      });
      const link = await res.json();
      out.value = link.url;
      out.focus();
      out.select();
      notify("Link valid until " + formatDate(link.expires_at) + ".", "ok");
    });
  });
  box.append(form, out);
}

async function tagsEditor(path, box) {
  let doc;
  try {
    doc = await s3Xml("GET", path + "?tagging");
  } catch (err) {
    box.append(el("p", {}, err.message));
    return;
  }
  const tags = [...doc.getElementsByTagName("Tag")].map((t) =>
    text(t, "Key") + "=" + text(t, "Value")
  );
  const area = el("textarea", { id: "tags-text", rows: 3 }, tags.join("\n"));
  const form = el(
    "form",
    {},
    el("label", { for: "tags-text" }, "One tag a line, key=value"),
    area,
    el("button", { type: "submit" }, "Save tags"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const lines = area.value.split("\n").map((l) => l.trim()).filter(Boolean);
    const xml = "<Tagging><TagSet>" + lines.map((l) => {
      const eq = l.indexOf("=");
      const k = eq < 0 ? l : l.slice(0, eq);
      const v = eq < 0 ? "" : l.slice(eq + 1);
      return "<Tag><Key>" + xmlEscape(k) + "</Key><Value>" + xmlEscape(v) + "</Value></Tag>";
    }).join("") + "</TagSet></Tagging>";
    await attempt(
      () =>
        s3("PUT", path + "?tagging", { headers: { "content-type": "application/xml" }, body: xml }),
      "Tags saved.",
    );
  });
  box.append(form);
}

async function versionsList(bucket, key, box) {
  let doc;
  try {
    doc = await s3Xml(
      "GET",
      "/" + encodeURIComponent(bucket) + "?versions&max-keys=100&prefix=" + encodeURIComponent(key),
    );
  } catch (err) {
    box.append(el("p", {}, err.message));
    return;
  }
  const versions = [...doc.documentElement.children]
    .filter((n) =>
      (n.tagName === "Version" || n.tagName === "DeleteMarker") && text(n, "Key") === key
    )
    .map((n) => ({
      id: text(n, "VersionId"),
      latest: text(n, "IsLatest") === "true",
      marker: n.tagName === "DeleteMarker",
      size: Number(text(n, "Size") || 0),
      modified: text(n, "LastModified"),
    }));
  if (versions.length <= 1 && (versions[0]?.id ?? "null") === "null") {
    box.append(el("p", {}, "Versioning is off for this bucket: only the current version is kept."));
    return;
  }
  const path = "/" + encodeURIComponent(bucket) + "/" + encodeKey(key);
  box.append(el(
    "table",
    { id: "version-list" },
    el("caption", { class: "sr-only" }, "Versions"),
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        ["Version", "Modified", "Size", "Actions"].map((t) => el("th", { scope: "col" }, t)),
      ),
    ),
    el(
      "tbody",
      {},
      versions.map((v) =>
        el(
          "tr",
          {},
          el("td", {}, v.id + (v.latest ? " (current)" : "") + (v.marker ? " (deleted)" : "")),
          el("td", {}, formatDate(v.modified)),
          el("td", {}, v.marker ? "" : formatSize(v.size)),
          el(
            "td",
            { class: "actions" },
            v.marker ? null : el("a", {
              class: "button",
              href: "/console/api/s3" + path + "?versionId=" + encodeURIComponent(v.id),
              download: basename(key),
            }, "Download"),
            v.latest || v.marker ? null : el("button", {
              type: "button",
              class: "restore",
              "aria-label": "Restore version " + v.id,
              onclick: async () => {
                const source = "/" + encodeURIComponent(bucket) + "/" + encodeKey(key) +
                  "?versionId=" + encodeURIComponent(v.id);
                const ok = await attempt(
                  () => s3("PUT", path, { headers: { "x-amz-copy-source": source } }),
                  "Version " + v.id + " restored as the current version.",
                );
                if (ok) objectView(bucket, key);
              },
            }, "Restore"),
          ),
        )
      ),
    ),
  ));
}

// ---------- bucket settings ----------

async function bucketSettingsView(bucket) {
  const path = "/" + encodeURIComponent(bucket);
  const versioning = el(
    "section",
    { "aria-labelledby": "ver-h", id: "versioning" },
    el("h2", { id: "ver-h" }, "Versioning"),
  );
  const policy = el(
    "section",
    { "aria-labelledby": "pol-h", id: "policy" },
    el("h2", { id: "pol-h" }, "Access policy"),
  );
  const configs = CONFIGS.map((c) =>
    el(
      "section",
      { "aria-labelledby": c.sub + "-h", id: "config-" + c.sub },
      el("h2", { id: c.sub + "-h" }, c.title),
    )
  );
  show("Settings of " + bucket, breadcrumbs(bucket, ""), versioning, policy, ...configs);
  CONFIGS.forEach((c, i) => xmlConfigEditor(configs[i], path, c));
  try {
    const doc = await s3Xml("GET", path + "?versioning");
    const status = text(doc, "Status") || "Off";
    const enabled = status === "Enabled";
    versioning.append(
      el(
        "p",
        { id: "versioning-status" },
        "Versioning is " + (enabled ? "on" : status === "Suspended" ? "suspended" : "off") + ".",
      ),
      el("button", {
        type: "button",
        id: "versioning-toggle",
        onclick: async () => {
          const xml = "<VersioningConfiguration><Status>" + (enabled ? "Suspended" : "Enabled") +
            "</Status></VersioningConfiguration>";
          const ok = await attempt(
            () =>
              s3("PUT", path + "?versioning", {
                headers: { "content-type": "application/xml" },
                body: xml,
              }),
            "Versioning " + (enabled ? "suspended" : "turned on") + ".",
          );
          if (ok) bucketSettingsView(bucket);
        },
      }, enabled ? "Suspend versioning" : "Turn versioning on"),
    );
  } catch (err) {
    versioning.append(el("p", { role: "alert", class: "notice error" }, err.message));
  }
  let current = "";
  try {
    const res = await s3("GET", path + "?policy", { allow: [404] });
    current = res.status === 404 ? "" : await res.text();
  } catch (err) {
    policy.append(el("p", { role: "alert", class: "notice error" }, err.message));
    return;
  }
  const area = el(
    "textarea",
    { id: "policy-text", rows: 12, spellcheck: "false" },
    current ? JSON.stringify(JSON.parse(current), null, 2) : "",
  );
  const verdict = el("p", { id: "policy-verdict", "aria-live": "polite" });
  const validate = () => {
    const problem = policyProblem(area.value);
    verdict.textContent = problem ? "Not valid: " + problem : "The policy is well-formed.";
    verdict.className = problem ? "notice error" : "notice ok";
    return !problem;
  };
  const save = async (doc) => {
    const ok = doc === ""
      ? await attempt(() => s3("DELETE", path + "?policy"), "The bucket is private (no policy).")
      : await attempt(
        () =>
          s3("PUT", path + "?policy", {
            headers: { "content-type": "application/json" },
            body: doc,
          }),
        "Policy saved.",
      );
    if (ok) bucketSettingsView(bucket);
  };
  const publicPolicy = JSON.stringify(
    {
      Version: "2012-10-17",
      Statement: [{
        Sid: "PublicRead",
        Effect: "Allow",
        Principal: "*",
        Action: ["s3:GetObject", "s3:ListBucket"],
        Resource: ["arn:aws:s3:::" + bucket, "arn:aws:s3:::" + bucket + "/*"],
      }],
    },
    null,
    2,
  );
  policy.append(
    el(
      "p",
      {},
      current ? "This bucket has a policy." : "No policy: only users given access can reach it.",
    ),
    el("label", { for: "policy-text" }, "Policy (JSON)"),
    area,
    verdict,
    el(
      "div",
      { class: "row" },
      el("button", { type: "button", id: "policy-validate", onclick: validate }, "Validate"),
      el("button", {
        type: "button",
        id: "policy-save",
        class: "primary",
        onclick: () => validate() && save(area.value),
      }, "Save policy"),
      el("button", {
        type: "button",
        id: "make-public",
        onclick: async () => {
          if (await ask("Let anybody read and list " + bucket + "?", "Make public")) {
            save(publicPolicy);
          }
        },
      }, "Make public (read-only)"),
      el("button", {
        type: "button",
        id: "make-private",
        onclick: () => save(""),
      }, "Make private"),
    ),
  );
}

/** Bucket configurations: each in a form, and as its XML document. */
const CONFIGS = [
  {
    sub: "tagging",
    title: "Bucket tags",
    form: bucketTagsForm,
    example: "<Tagging><TagSet>\n  <Tag><Key>team</Key><Value>blue</Value></Tag>\n" +
      "</TagSet></Tagging>",
  },
  {
    sub: "lifecycle",
    title: "Lifecycle rules",
    form: (current, saveDoc) => rulesEditor(LIFECYCLE_RULES, current, saveDoc),
    example: "<LifecycleConfiguration>\n  <Rule>\n    <ID>expire-logs</ID>\n" +
      "    <Filter><Prefix>logs/</Prefix></Filter>\n    <Status>Enabled</Status>\n" +
      "    <Expiration><Days>30</Days></Expiration>\n  </Rule>\n</LifecycleConfiguration>",
  },
  {
    sub: "cors",
    title: "CORS rules",
    form: (current, saveDoc) => rulesEditor(CORS_RULES, current, saveDoc),
    example: "<CORSConfiguration>\n  <CORSRule>\n" +
      "    <AllowedOrigin>https://app.example.com</AllowedOrigin>\n" +
      "    <AllowedMethod>GET</AllowedMethod>\n    <AllowedHeader>*</AllowedHeader>\n" +
      "    <MaxAgeSeconds>3600</MaxAgeSeconds>\n  </CORSRule>\n</CORSConfiguration>",
  },
  {
    sub: "object-lock",
    title: "Object Lock defaults",
    keep: true,
    form: lockForm,
    example: "<ObjectLockConfiguration>\n  <ObjectLockEnabled>Enabled</ObjectLockEnabled>\n" +
      "  <Rule><DefaultRetention><Mode>GOVERNANCE</Mode><Days>7</Days></DefaultRetention></Rule>\n" +
      "</ObjectLockConfiguration>",
  },
];

// ---------- rule forms ----------

/** The stored document to edit, or an empty one with its root. */
function configDoc(current, root) {
  return new DOMParser().parseFromString(current || "<" + root + "/>", "application/xml");
}

function kids(node, name) {
  return [...node.children].filter((n) => n.localName === name);
}

function kid(node, name) {
  return kids(node, name)[0];
}

function leaf(node, path) {
  let at = node;
  for (const name of path.split("/")) at = at && kid(at, name);
  return at ? at.textContent : "";
}

/** Replaces the node's children called name with one element per value. */
function setLeaves(node, name, values) {
  for (const old of kids(node, name)) old.remove();
  for (const value of values) {
    const child = node.ownerDocument.createElementNS(node.namespaceURI, name);
    child.textContent = value;
    node.append(child);
  }
}

/** Sets container/name to value inside node, creating the container; "" removes the container. */
function setNested(node, container, name, value) {
  if (value === "") return setLeaves(node, container, []);
  let box = kid(node, container);
  if (!box) {
    box = node.ownerDocument.createElementNS(node.namespaceURI, container);
    node.append(box);
  }
  setLeaves(box, name, [value]);
}

function listOf(value) {
  return value.split(",").map((v) => v.trim()).filter(Boolean);
}

/** "" when value is empty or a whole number from min to max, else what is wrong. */
function wholeProblem(value, label, min, max) {
  if (value === "") return "";
  if (!/^\d{1,10}$/.test(value) || Number(value) < min || Number(value) > max) {
    return label + " must be a whole number from " + min + " to " + max + ".";
  }
  return "";
}

/** A rule name from the prefix ("logs/" -> "logs"), numbered when another rule has it. */
function unusedName(prefix, others) {
  const base = prefix.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/^-+|-+$/g, "") || "all-keys";
  const taken = new Set(others.map((r) => leaf(r, "ID")));
  let name = base;
  for (let n = 2; taken.has(name); n++) name = base + "-" + n;
  return name;
}

const LIFECYCLE_RULES = {
  id: "lifecycle-rule",
  root: "LifecycleConfiguration",
  item: "Rule",
  caption: "Lifecycle rules",
  headers: ["Rule", "Keys", "Actions", "State"],
  cells: (rule) => {
    const filter = kid(rule, "Filter");
    const plain = !filter || (filter.children.length <= 1 && (!filter.firstElementChild ||
      filter.firstElementChild.localName === "Prefix"));
    const prefix = leaf(rule, "Filter/Prefix") || leaf(rule, "Prefix");
    const actions = [];
    const days = (n) => n + (n === "1" ? " day" : " days");
    if (leaf(rule, "Expiration/Days")) actions.push("delete after " + days(leaf(rule, "Expiration/Days")));
    if (leaf(rule, "Expiration/Date")) actions.push("delete on " + leaf(rule, "Expiration/Date"));
    if (leaf(rule, "Expiration/ExpiredObjectDeleteMarker") === "true") {
      actions.push("remove lone delete markers");
    }
    const noncurrent = leaf(rule, "NoncurrentVersionExpiration/NoncurrentDays");
    if (noncurrent) actions.push("old versions deleted after " + days(noncurrent));
    const abort = leaf(rule, "AbortIncompleteMultipartUpload/DaysAfterInitiation");
    if (abort) actions.push("unfinished uploads aborted after " + days(abort));
    if (kid(rule, "Transition") || kid(rule, "NoncurrentVersionTransition")) {
      actions.push("transitions (in the XML)");
    }
    return [
      leaf(rule, "ID") || "(no id)",
      (prefix ? "starting with " + prefix : "all keys") + (plain ? "" : ", with more conditions"),
      actions.join("; "),
      leaf(rule, "Status") === "Enabled" ? "on" : "off",
    ];
  },
  fields: [
    { name: "name", label: "Rule name (ID)", read: (r) => leaf(r, "ID") },
    {
      name: "prefix",
      label: "For keys starting with (empty: all)",
      read: (r) => leaf(r, "Filter/Prefix") || leaf(r, "Prefix"),
      fixed: (r) => {
        const f = kid(r, "Filter");
        return f && [...f.children].some((c) => c.localName !== "Prefix")
          ? "This rule's filter has tags or sizes: change it in the XML below."
          : "";
      },
    },
    {
      name: "expire",
      label: "Delete objects after (days)",
      attrs: { type: "number", min: 1 },
      read: (r) => leaf(r, "Expiration/Days"),
      fixed: (r) =>
        kid(r, "Expiration") && !leaf(r, "Expiration/Days")
          ? "This rule expires by date or delete marker: change it in the XML below."
          : "",
    },
    {
      name: "noncurrent",
      label: "Delete older versions after (days)",
      attrs: { type: "number", min: 1 },
      read: (r) => leaf(r, "NoncurrentVersionExpiration/NoncurrentDays"),
    },
    {
      name: "abort",
      label: "Abort unfinished uploads after (days)",
      attrs: { type: "number", min: 1 },
      read: (r) => leaf(r, "AbortIncompleteMultipartUpload/DaysAfterInitiation"),
    },
    {
      name: "enabled",
      label: "Rule is on",
      attrs: { type: "checkbox", checked: true },
      read: (r) => leaf(r, "Status") !== "Disabled",
    },
  ],
  check: (v, others) => {
    if (v.name.length > 255) return "The rule name is at most 255 characters.";
    if (v.name && others.some((r) => leaf(r, "ID") === v.name)) {
      return "Another rule is called " + v.name + ".";
    }
    if (new TextEncoder().encode(v.prefix).length > 1024) return "The prefix is too long.";
    return wholeProblem(v.expire, "Delete objects after", 1, 2147483647) ||
      wholeProblem(v.noncurrent, "Delete older versions after", 1, 2147483647) ||
      wholeProblem(v.abort, "Abort unfinished uploads after", 1, 2147483647);
  },
  write: (rule, v, others) => {
    setLeaves(rule, "ID", [v.name || unusedName(v.prefix, others)]);
    if (!v.fixed.prefix) {
      // A legacy top-level Prefix becomes a Filter (a rule has one or the other).
      setLeaves(rule, "Prefix", []);
      setLeaves(rule, "Filter", []);
      const filter = rule.ownerDocument.createElementNS(rule.namespaceURI, "Filter");
      setLeaves(filter, "Prefix", [v.prefix]);
      rule.append(filter);
    }
    setLeaves(rule, "Status", [v.enabled ? "Enabled" : "Disabled"]);
    if (!v.fixed.expire) setNested(rule, "Expiration", "Days", v.expire);
    setNested(rule, "NoncurrentVersionExpiration", "NoncurrentDays", v.noncurrent);
    setNested(rule, "AbortIncompleteMultipartUpload", "DaysAfterInitiation", v.abort);
    const actions = ["Expiration", "NoncurrentVersionExpiration", "AbortIncompleteMultipartUpload",
      "Transition", "NoncurrentVersionTransition"];
    return actions.some((a) => kid(rule, a))
      ? ""
      : "Give a number of days for at least one action.";
  },
};

const CORS_METHODS = ["GET", "PUT", "POST", "DELETE", "HEAD"];

const CORS_RULES = {
  id: "cors-rule",
  root: "CORSConfiguration",
  item: "CORSRule",
  caption: "CORS rules",
  headers: ["Origins", "Methods", "Headers", "Cache"],
  cells: (rule) => [
    kids(rule, "AllowedOrigin").map((n) => n.textContent).join(", "),
    kids(rule, "AllowedMethod").map((n) => n.textContent).join(", "),
    kids(rule, "AllowedHeader").map((n) => n.textContent).join(", ") || "none",
    leaf(rule, "MaxAgeSeconds") ? leaf(rule, "MaxAgeSeconds") + " s" : "",
  ],
  fields: [
    {
      name: "origin",
      label: "Allowed origins, comma-separated (https://app.example.com, or *)",
      read: (r) => kids(r, "AllowedOrigin").map((n) => n.textContent).join(", "),
    },
    {
      name: "methods",
      label: "Methods, comma-separated (GET, PUT, POST, DELETE, HEAD)",
      attrs: { value: "GET" },
      read: (r) => kids(r, "AllowedMethod").map((n) => n.textContent).join(", "),
    },
    {
      name: "headers",
      label: "Request headers allowed, comma-separated (* for any)",
      attrs: { value: "*" },
      read: (r) => kids(r, "AllowedHeader").map((n) => n.textContent).join(", "),
    },
    {
      name: "expose",
      label: "Response headers scripts may read, comma-separated",
      read: (r) => kids(r, "ExposeHeader").map((n) => n.textContent).join(", "),
    },
    {
      name: "maxage",
      label: "Browsers may cache the answer for (seconds)",
      attrs: { type: "number", min: 0, value: 3600 },
      read: (r) => leaf(r, "MaxAgeSeconds"),
    },
  ],
  check: (v) => {
    const origins = listOf(v.origin);
    if (origins.length === 0) return "Give the origin the rule allows.";
    const twoStars = (s) => s.split("*").length > 2;
    const badOrigin = origins.find(twoStars);
    if (badOrigin) return "The origin " + badOrigin + " has more than one *.";
    const methods = listOf(v.methods).map((m) => m.toUpperCase());
    if (methods.length === 0) return "Give at least one method.";
    const badMethod = methods.find((m) => !CORS_METHODS.includes(m));
    if (badMethod) return badMethod + " is not one of " + CORS_METHODS.join(", ") + ".";
    const badHeader = listOf(v.headers).find(twoStars);
    if (badHeader) return "The header " + badHeader + " has more than one *.";
    return wholeProblem(v.maxage, "The cache time", 0, 2147483647);
  },
  write: (rule, v) => {
    setLeaves(rule, "AllowedOrigin", listOf(v.origin));
    setLeaves(rule, "AllowedMethod", [...new Set(listOf(v.methods).map((m) => m.toUpperCase()))]);
    setLeaves(rule, "AllowedHeader", listOf(v.headers));
    setLeaves(rule, "ExposeHeader", listOf(v.expose));
    setLeaves(rule, "MaxAgeSeconds", v.maxage === "" ? [] : [String(Number(v.maxage))]);
    return "";
  },
};

/**
 * The rules of a configuration, a row each with Edit and Delete, and a form that adds a rule or
 * changes the one being edited. The form's values are checked before anything is sent; each
 * change saves the whole document (the server checks it again). A rule keeps what the form does
 * not show (transitions, tag filters, ...).
 */
function rulesEditor(spec, current, saveDoc) {
  const doc = configDoc(current, spec.root);
  const rules = kids(doc.documentElement, spec.item);
  const id = spec.id;
  let editing = -1;
  const legend = el("legend", {}, "Add a rule");
  const problem = el("p", { id: id + "-problem", "aria-live": "polite" });
  const notes = {};
  const inputs = {};
  const rows = spec.fields.map((f) => {
    const checkbox = f.attrs?.type === "checkbox";
    inputs[f.name] = el("input", { id: id + "-" + f.name, autocomplete: "off", ...f.attrs });
    notes[f.name] = el("span", { class: "hint", id: id + "-" + f.name + "-note" });
    inputs[f.name].setAttribute("aria-describedby", notes[f.name].id);
    return checkbox
      ? el("p", {}, el("label", { class: "inline" }, inputs[f.name], " " + f.label), notes[f.name])
      : el("p", {}, el("label", { for: inputs[f.name].id }, f.label), inputs[f.name], notes[f.name]);
  });
  const submit = el("button", { type: "submit", class: "primary", id: id + "-add" }, "Add rule");
  const cancel = el("button", { type: "button", id: id + "-cancel", hidden: true }, "Cancel");
  const form = el(
    "form",
    { class: "card", id, novalidate: true },
    el("fieldset", {}, legend, rows, problem, el("div", { class: "row" }, submit, cancel)),
  );
  const fill = (rule) => {
    for (const f of spec.fields) {
      const input = inputs[f.name];
      const fixed = rule && f.fixed ? f.fixed(rule) : "";
      if (input.type === "checkbox") input.checked = rule ? f.read(rule) : true;
      else input.value = rule ? f.read(rule) : (f.attrs?.value ?? "");
      input.disabled = fixed !== "";
      notes[f.name].textContent = fixed;
    }
    problem.textContent = "";
    problem.className = "";
  };
  const startEdit = (i) => {
    editing = i;
    fill(i < 0 ? undefined : rules[i]);
    legend.textContent = i < 0 ? "Add a rule" : "Change rule " + (i + 1);
    submit.textContent = i < 0 ? "Add rule" : "Save rule";
    cancel.hidden = i < 0;
    if (i >= 0) inputs[spec.fields[0].name].focus();
  };
  const refuse = (text) => {
    problem.textContent = "Not saved: " + text;
    problem.className = "notice error";
  };
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const values = { fixed: {} };
    for (const f of spec.fields) {
      const input = inputs[f.name];
      values[f.name] = input.type === "checkbox" ? input.checked : input.value.trim();
      values.fixed[f.name] = input.disabled;
    }
    const others = rules.filter((_, i) => i !== editing);
    const wrong = spec.check(values, others);
    if (wrong) return refuse(wrong);
    // Changes go to a copy: a refused save leaves the rules as the server has them.
    const draft = doc.cloneNode(true);
    const root = draft.documentElement;
    let rule = kids(root, spec.item)[editing];
    if (!rule) {
      rule = draft.createElementNS(root.namespaceURI, spec.item);
      root.append(rule);
    }
    const incomplete = spec.write(rule, values, others);
    if (incomplete) return refuse(incomplete);
    await saveDoc(new XMLSerializer().serializeToString(draft));
  });
  cancel.addEventListener("click", () => startEdit(-1));
  fill(undefined);
  const list = rules.length === 0
    ? el("p", { id: id + "-none" }, "No rules yet.")
    : simpleTable(
      id + "s",
      spec.caption,
      [...spec.headers, "Change"],
      rules.map((rule, i) => [
        ...spec.cells(rule),
        el(
          "span",
          { class: "actions" },
          el("button", {
            type: "button",
            class: "edit",
            "aria-label": "Edit rule " + (i + 1),
            onclick: () => startEdit(i),
          }, "Edit"),
          el("button", {
            type: "button",
            class: "danger",
            "aria-label": "Delete rule " + (i + 1),
            onclick: async () => {
              if (!(await ask("Delete rule " + (i + 1) + " (" + spec.cells(rule)[0] + ")?", "Delete"))) {
                return;
              }
              const draft = doc.cloneNode(true);
              kids(draft.documentElement, spec.item)[i].remove();
              const left = kids(draft.documentElement, spec.item).length;
              await saveDoc(left === 0 ? "" : new XMLSerializer().serializeToString(draft));
            },
          }, "Delete"),
        ),
      ]),
    );
  return el("div", { class: "rules" }, list, form);
}

/** What is wrong with tags given one a line as key=value, or "" when nothing is. */
function tagLinesProblem(lines) {
  const keys = new Set();
  if (lines.length > 50) return "A bucket has at most 50 tags.";
  for (const line of lines) {
    const eq = line.indexOf("=");
    const key = (eq < 0 ? line : line.slice(0, eq)).trim();
    const value = eq < 0 ? "" : line.slice(eq + 1).trim();
    if (!key) return "A tag has no key: " + line;
    if (key.length > 128) return "The key " + key.slice(0, 20) + "… is over 128 characters.";
    if (value.length > 256) return "The value of " + key + " is over 256 characters.";
    if (keys.has(key)) return "The key " + key + " is given twice.";
    keys.add(key);
  }
  return "";
}

/** The bucket's tags, one a line as key=value: checked, then saved (none removes them). */
function bucketTagsForm(current, saveDoc) {
  const doc = configDoc(current, "Tagging");
  const lines = [...doc.getElementsByTagName("Tag")].map((t) =>
    leaf(t, "Key") + "=" + leaf(t, "Value")
  );
  const area = el("textarea", { id: "bucket-tags-text", rows: 4, spellcheck: "false" }, lines.join("\n"));
  const problem = el("p", { id: "bucket-tags-problem", "aria-live": "polite" });
  const form = el(
    "form",
    { class: "card", id: "bucket-tags" },
    el("label", { for: "bucket-tags-text" }, "One tag a line, key=value"),
    area,
    problem,
    el("button", { type: "submit", class: "primary", id: "bucket-tags-save" }, "Save tags"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const given = area.value.split("\n").map((l) => l.trim()).filter(Boolean);
    const wrong = tagLinesProblem(given);
    if (wrong) {
      problem.textContent = "Not saved: " + wrong;
      problem.className = "notice error";
      return;
    }
    const xml = "<Tagging><TagSet>" + given.map((l) => {
      const eq = l.indexOf("=");
      const k = (eq < 0 ? l : l.slice(0, eq)).trim();
      const v = eq < 0 ? "" : l.slice(eq + 1).trim();
      return "<Tag><Key>" + xmlEscape(k) + "</Key><Value>" + xmlEscape(v) + "</Value></Tag>";
    }).join("") + "</TagSet></Tagging>";
    await saveDoc(given.length === 0 ? "" : xml);
  });
  return form;
}

const LOCK_UNITS = { Days: 36500, Years: 100 };

/** The default retention of a bucket with Object Lock: shown, changed, removed. */
function lockForm(current, saveDoc) {
  if (!current) {
    return el(
      "div",
      {},
      el(
        "p",
        { id: "lock-summary" },
        "Object Lock is off for this bucket. It can be turned on once versioning is on, and then " +
          "never turned off.",
      ),
      el("button", {
        type: "button",
        id: "lock-enable",
        onclick: async () => {
          if (!(await ask("Turn Object Lock on? It cannot be turned off again.", "Turn on"))) {
            return;
          }
          await saveDoc(
            "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>" +
              "</ObjectLockConfiguration>",
          );
        },
      }, "Turn Object Lock on"),
    );
  }
  const doc = configDoc(current, "ObjectLockConfiguration");
  const retention = doc.getElementsByTagName("DefaultRetention")[0];
  const mode = retention ? leaf(retention, "Mode") : "";
  const unit = retention && leaf(retention, "Years") ? "Years" : "Days";
  const period = retention ? leaf(retention, unit) : "";
  const modeSelect = el(
    "select",
    { id: "lock-mode" },
    [["", "no default retention"], ["GOVERNANCE", "GOVERNANCE"], ["COMPLIANCE", "COMPLIANCE"]]
      .map(([v, label]) => el("option", { value: v, selected: v === mode }, label)),
  );
  const periodInput = el("input", {
    id: "lock-period",
    type: "number",
    min: 1,
    value: period,
    autocomplete: "off",
  });
  const unitSelect = el(
    "select",
    { id: "lock-unit", "aria-label": "Unit" },
    Object.keys(LOCK_UNITS).map((u) => el("option", { value: u, selected: u === unit }, u)),
  );
  const problem = el("p", { id: "lock-problem", "aria-live": "polite" });
  const documentFor = (m, n, u) =>
    "<ObjectLockConfiguration><ObjectLockEnabled>Enabled</ObjectLockEnabled>" +
    (m ? "<Rule><DefaultRetention><Mode>" + m + "</Mode><" + u + ">" + n + "</" + u + ">" +
      "</DefaultRetention></Rule>" : "") +
    "</ObjectLockConfiguration>";
  const form = el(
    "form",
    { class: "card", id: "lock-form", novalidate: true },
    el(
      "p",
      {},
      el("label", { for: "lock-mode" }, "Lock new objects in mode"),
      modeSelect,
    ),
    el(
      "p",
      { class: "row" },
      el("label", { for: "lock-period" }, "for"),
      periodInput,
      unitSelect,
    ),
    problem,
    el(
      "div",
      { class: "row" },
      el("button", { type: "submit", class: "primary", id: "lock-save" }, "Save default"),
      retention
        ? el("button", {
          type: "button",
          id: "lock-remove",
          onclick: () => saveDoc(documentFor("", "", "")),
        }, "Remove default retention")
        : null,
    ),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const m = modeSelect.value;
    const n = periodInput.value.trim();
    const u = unitSelect.value;
    const wrong = m && (n === "" ? "Give the number of " + u.toLowerCase() + "." : wholeProblem(n, u, 1, LOCK_UNITS[u]));
    if (wrong) {
      problem.textContent = "Not saved: " + wrong;
      problem.className = "notice error";
      return;
    }
    if (
      m === "COMPLIANCE" &&
      !(await ask(
        "In COMPLIANCE mode nobody, the administrator included, can delete new objects before " +
          n + " " + u.toLowerCase() + " have passed. Save?",
        "Save",
      ))
    ) return;
    await saveDoc(documentFor(m, String(Number(n)), u));
  });
  return el(
    "div",
    {},
    el(
      "p",
      { id: "lock-summary" },
      retention
        ? "New objects are locked in " + mode + " mode for " + period + " " +
          unit.toLowerCase() + "."
        : "Object Lock is on, with no default retention: objects are locked only when asked.",
    ),
    form,
  );
}

/**
 * What is wrong with an XML document's structure (tags that do not nest or close, a stray "<",
 * more than one root), or "" when nothing is; the server checks the rest. (DOMParser would do,
 * but its error element carries an inline style that the page's CSP blocks and reports.)
 */
function xmlProblem(source) {
  const body = source.trim().replace(/^<\?xml[^>]*\?>/, "").replace(/<!--[\s\S]*?-->/g, "");
  const stack = [];
  let roots = 0;
  for (const m of body.matchAll(/<([^<>]*)>/g)) {
    const tag = m[1];
    const name = /^\/?([A-Za-z_][\w.:-]*)/.exec(tag)?.[1];
    if (!name) return "a tag has no name: <" + tag + ">";
    if (tag.startsWith("/")) {
      const open = stack.pop();
      if (open !== name) return "</" + name + "> closes " + (open ? "<" + open + ">" : "nothing");
    } else if (!tag.endsWith("/")) {
      if (stack.length === 0) roots++;
      stack.push(name);
    } else if (stack.length === 0) roots++;
  }
  if (/[<>]/.test(body.replace(/<[^<>]*>/g, ""))) return "a < or > stands outside a tag";
  if (stack.length > 0) return "<" + stack[stack.length - 1] + "> is not closed";
  if (roots !== 1) return roots === 0 ? "there is no element" : "there is more than one root";
  return "";
}

/** One configuration: its form, and its XML: read, edit, check, save, remove. */
async function xmlConfigEditor(box, path, c) {
  const heading = box.firstElementChild;
  let current = "";
  try {
    const res = await s3("GET", path + "?" + c.sub, { allow: [404] });
    current = res.status === 404 ? "" : await res.text();
  } catch (err) {
    box.append(el("p", { class: "notice error" }, err.message));
    return;
  }
  const reload = () => {
    box.replaceChildren(heading);
    xmlConfigEditor(box, path, c);
  };
  const put = (body) =>
    attempt(
      () =>
        s3("PUT", path + "?" + c.sub, {
          headers: { "content-type": "application/xml", "x-amz-checksum-crc32": crc32Base64(body) },
          body,
        }),
      c.title + " saved.",
    );
  const remove = () => attempt(() => s3("DELETE", path + "?" + c.sub), c.title + " removed.");
  /** Saves a document ("" removes the configuration); the section is read again after. */
  const saveDoc = async (body) => {
    const ok = body === "" ? await remove() : await put(body);
    if (ok) reload();
    return ok;
  };
  const id = c.sub + "-text";
  const area = el(
    "textarea",
    { id, rows: 8, spellcheck: "false", placeholder: c.example },
    current,
  );
  const verdict = el("p", { id: c.sub + "-verdict", "aria-live": "polite" });
  const save = async () => {
    const problem = xmlProblem(area.value);
    verdict.textContent = problem ? "Not valid XML: " + problem : "";
    verdict.className = problem ? "notice error" : "";
    if (!problem) await saveDoc(area.value);
  };
  const editor = [
    el("label", { for: id }, c.title + " (XML)"),
    area,
    verdict,
    el(
      "div",
      { class: "row" },
      el(
        "button",
        { type: "button", class: "primary", id: c.sub + "-save", onclick: save },
        "Save",
      ),
      el("button", {
        type: "button",
        id: c.sub + "-example",
        onclick: () => {
          area.value = c.example;
          area.focus();
        },
      }, "Insert an example"),
      c.keep ? null : el("button", {
        type: "button",
        id: c.sub + "-remove",
        onclick: () => saveDoc(""),
      }, "Remove"),
    ),
  ];
  box.append(
    c.form(current, saveDoc),
    el(
      "details",
      { id: c.sub + "-xml" },
      el("summary", {}, "Edit as XML"),
      ...editor,
    ),
  );
}

/** What is wrong with a policy document before the server is asked, or "" when nothing is. */
function policyProblem(source) {
  let doc;
  try {
    doc = JSON.parse(source);
  } catch (err) {
    return "not JSON (" + err.message + ")";
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) return "not a JSON object";
  const statements = Array.isArray(doc.Statement) ? doc.Statement : [doc.Statement];
  if (!doc.Statement || statements.length === 0) return "it has no Statement";
  for (const [i, s] of statements.entries()) {
    const where = "statement " + (i + 1) + ": ";
    if (typeof s !== "object" || s === null) return where + "not an object";
    if (s.Effect !== "Allow" && s.Effect !== "Deny") return where + "Effect must be Allow or Deny";
    if (!s.Action && !s.NotAction) return where + "Action is missing";
    if (!s.Resource && !s.NotResource) return where + "Resource is missing";
    if (!s.Principal && !s.NotPrincipal) return where + "Principal is missing";
  }
  return "";
}

// ---------- shares ----------

/** A share link for the folder: anyone with the link (and the password, if set) may use it. */
function shareForm(bucket, prefix) {
  const choices = [[3600, "1 hour"], [86400, "1 day"], [604800, "7 days"], [2592000, "30 days"]];
  const out = el("div", { id: "share-result" });
  const form = el(
    "form",
    { id: "share-form" },
    el(
      "fieldset",
      { class: "methods" },
      el("legend", {}, "Those with the link may"),
      [["list", "see the files"], ["read", "download"], ["write", "upload"]].map(([p, label]) =>
        el(
          "label",
          { class: "inline" },
          el("input", { type: "checkbox", name: "perm", value: p, checked: p !== "write" }),
          " " + label,
        )
      ),
    ),
    el(
      "p",
      {},
      el("label", { for: "share-expiry" }, "Valid for"),
      el(
        "select",
        { id: "share-expiry" },
        choices.map(([v, label]) => el("option", { value: v, selected: v === 86400 }, label)),
      ),
    ),
    el(
      "p",
      {},
      el("label", { for: "share-password" }, "Password (optional, 4 characters or more)"),
      el("input", { id: "share-password", type: "password", autocomplete: "new-password" }),
    ),
    el("button", { type: "submit", class: "primary" }, "Make share link"),
    out,
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const permissions = [...form.querySelectorAll("input[name=perm]:checked")].map((i) => i.value);
    const password = document.getElementById("share-password").value;
    await attempt(async () => {
      const res = await request("POST", "/console/api/shares", {
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          bucket,
          prefix,
          permissions,
          expires_in: Number(document.getElementById("share-expiry").value),
          ...(password ? { password } : {}),
        }),
      });
      const share = await res.json();
      out.replaceChildren(
        el(
          "label",
          { for: "share-url" },
          "Share link (valid until " + formatDate(share.expires_at) + ")",
        ),
        el("input", { id: "share-url", readonly: true, class: "wide", value: share.url }),
      );
      document.getElementById("share-url").select();
    }, "Share link made.");
  });
  return el(
    "details",
    { class: "card" },
    el("summary", {}, "Share this folder with a link"),
    form,
  );
}

async function sharesView() {
  const list = el("div", { class: "table-wrap" }, el("p", {}, "Loading…"));
  show("Your share links", list);
  let shares;
  try {
    shares = (await (await request("GET", "/console/api/shares")).json()).shares;
  } catch (err) {
    list.replaceChildren(el("p", { role: "alert", class: "notice error" }, err.message));
    return;
  }
  if (shares.length === 0) {
    list.replaceChildren(el("p", {}, "No share links yet: make one from a folder's page."));
    return;
  }
  list.replaceChildren(el(
    "table",
    { id: "shares" },
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        ["Folder", "Allows", "Expires", "Used", "State", "Actions"].map((t) =>
          el("th", { scope: "col" }, t)
        ),
      ),
    ),
    el(
      "tbody",
      {},
      shares.map((sh) =>
        el(
          "tr",
          { "data-share": sh.id },
          el("td", {}, sh.bucket + "/" + sh.prefix),
          el("td", {}, sh.permissions.join(", ") + (sh.password ? " (password)" : "")),
          el("td", {}, formatDate(sh.expires_at)),
          el("td", {}, sh.downloads + " down, " + sh.uploads + " up"),
          el("td", {}, sh.state),
          el(
            "td",
            {},
            sh.state === "active"
              ? el("button", {
                type: "button",
                class: "danger",
                "aria-label": "Revoke share of " + sh.bucket + "/" + sh.prefix,
                onclick: async () => {
                  const ok = await attempt(
                    () => request("DELETE", "/console/api/shares/" + encodeURIComponent(sh.id)),
                    "Share revoked.",
                  );
                  if (ok) sharesView();
                },
              }, "Revoke")
              : null,
          ),
        )
      ),
    ),
  ));
}

// ---------- administration ----------

function secretBox(title, accessKey, secret) {
  return el(
    "div",
    { class: "card secret", role: "alert", id: "secret-box" },
    el("h2", {}, title),
    el("p", {}, "Copy the secret now: it is shown only once."),
    el(
      "dl",
      { class: "facts" },
      el("dt", {}, "Access key"),
      el("dd", { id: "new-access-key" }, accessKey),
      el("dt", {}, "Secret key"),
      el("dd", { id: "new-secret" }, secret),
    ),
    el(
      "button",
      { type: "button", onclick: (e) => e.target.closest(".secret").remove() },
      "I have saved it",
    ),
  );
}

async function usersView(notice) {
  const form = el(
    "form",
    { class: "card", id: "new-user" },
    el("h2", {}, "New user"),
    el(
      "p",
      {},
      el("label", { for: "user-name" }, "Name"),
      el("input", { id: "user-name", required: true, autocomplete: "off" }),
    ),
    el(
      "p",
      {},
      el("label", { for: "user-email" }, "E-mail (optional)"),
      el("input", { id: "user-email", type: "email", autocomplete: "off" }),
    ),
    el("button", { type: "submit", class: "primary" }, "Create user"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    await attempt(async () => {
      const email = document.getElementById("user-email").value;
      const user = await adminJson("POST", "/users", {
        name: document.getElementById("user-name").value,
        ...(email ? { email } : {}),
      });
      usersView(secretBox("User " + user.name + " created", user.access_key, user.secret_key));
    });
  });
  const list = el("div", { class: "table-wrap" }, el("p", {}, "Loading…"));
  show("Users", notice || null, list, form);
  let users;
  try {
    users = (await adminJson("GET", "/users")).users;
  } catch (err) {
    list.replaceChildren(el("p", { role: "alert", class: "notice error" }, err.message));
    return;
  }
  if (users.length === 0) {
    list.replaceChildren(el("p", {}, "No users yet."));
    return;
  }
  list.replaceChildren(el(
    "table",
    { id: "users" },
    el("caption", { class: "sr-only" }, "Users"),
    el(
      "thead",
      {},
      el(
        "tr",
        {},
        ["Name", "Access key", "State", "Bucket access", "Actions"].map((t) =>
          el("th", { scope: "col" }, t)
        ),
      ),
    ),
    el(
      "tbody",
      {},
      users.map((u) => {
        const key = encodeURIComponent(u.access_key);
        const act = (label, fn, cls) =>
          el("button", {
            type: "button",
            class: cls,
            "aria-label": label + " " + u.name,
            onclick: fn,
          }, label);
        return el(
          "tr",
          { "data-user": u.name },
          el("td", {}, u.name),
          el("td", {}, el("code", {}, u.access_key)),
          el("td", {}, u.enabled ? "enabled" : "disabled"),
          el(
            "td",
            {},
            u.bucket_access.map((a) => a.bucket + ": " + a.permission).join(", ") || "none",
          ),
          el(
            "td",
            { class: "actions" },
            act("Access", () => accessEditor(u)),
            act(u.enabled ? "Disable" : "Enable", async () => {
              if (
                await attempt(
                  () =>
                    adminJson("POST", "/users/" + key + "/" + (u.enabled ? "disable" : "enable")),
                  u.name + (u.enabled ? " disabled." : " enabled."),
                )
              ) usersView();
            }),
            act("Rotate keys", async () => {
              if (
                !(await ask("Give " + u.name + " new keys? The old ones stop working.", "Rotate"))
              ) return;
              await attempt(async () => {
                const k = await adminJson("POST", "/users/" + key + "/keys");
                usersView(secretBox("New keys for " + u.name, k.access_key, k.secret_key));
              });
            }),
            act("Delete", async () => {
              if (!(await ask("Delete the user " + u.name + "?", "Delete"))) return;
              if (await attempt(() => adminJson("DELETE", "/users/" + key), u.name + " deleted.")) {
                usersView();
              }
            }, "danger"),
          ),
        );
      }),
    ),
  ));
}

function accessEditor(user) {
  const rows = el("tbody", {});
  const addRow = (bucket, permission) => {
    const n = rows.children.length;
    rows.append(el(
      "tr",
      {},
      el(
        "td",
        {},
        el("input", {
          "aria-label": "Bucket " + (n + 1),
          class: "acc-bucket",
          value: bucket,
          autocomplete: "off",
        }),
      ),
      el(
        "td",
        {},
        el(
          "select",
          { "aria-label": "Permission " + (n + 1), class: "acc-perm" },
          ["read", "write", "readwrite", "none"].map((p) =>
            el("option", { value: p, selected: p === permission }, p)
          ),
        ),
      ),
      el(
        "td",
        {},
        el("button", { type: "button", onclick: (e) => e.target.closest("tr").remove() }, "Remove"),
      ),
    ));
  };
  for (const a of user.bucket_access) addRow(a.bucket, a.permission);
  const form = el(
    "form",
    { class: "card", id: "access-editor" },
    el("h2", {}, "Bucket access of " + user.name),
    el(
      "table",
      {},
      el(
        "thead",
        {},
        el("tr", {}, ["Bucket", "Permission", ""].map((t) => el("th", { scope: "col" }, t))),
      ),
      rows,
    ),
    el(
      "div",
      { class: "row" },
      el(
        "button",
        { type: "button", id: "access-add", onclick: () => addRow("", "read") },
        "Add a bucket",
      ),
      el("button", { type: "submit", class: "primary" }, "Save access"),
      el("button", { type: "button", onclick: () => usersView() }, "Cancel"),
    ),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const access = [...rows.children].map((tr) => ({
      bucket: tr.querySelector(".acc-bucket").value.trim(),
      permission: tr.querySelector(".acc-perm").value,
    })).filter((a) => a.bucket);
    const ok = await attempt(
      () =>
        adminJson("PUT", "/users/" + encodeURIComponent(user.access_key) + "/buckets", {
          bucket_access: access,
        }),
      "Access of " + user.name + " saved.",
    );
    if (ok) usersView();
  });
  main().append(form);
  form.querySelector("input, button").focus();
}

/** A time filter's hash value ("2026-01-31T09:30:00Z") as a datetime-local field's value. */
function timeField(value) {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2})?)/.exec(value || "");
  return m ? m[1] : "";
}

/**
 * A filter form whose fields become the screen's hash parameters (and the API's query). Fields
 * of type "time" are picked in UTC, as the tables show times; "since" must come before "until".
 */
function filterForm(id, base, params, fields) {
  const form = el(
    "form",
    { class: "row card", id, role: "search" },
    fields.map(([name, label, type]) =>
      el(
        "span",
        { class: "field" },
        el("label", { for: id + "-" + name }, label),
        el("input", {
        id: id + "-" + name,
        name,
        type: type === "time" ? "datetime-local" : "text",
        step: type === "time" ? 1 : undefined,
        value: type === "time" ? timeField(params.get(name)) : params.get(name) || "",
        autocomplete: "off",
      }),
      )
    ),
    el("button", { type: "submit" }, "Filter"),
  );
  form.addEventListener("submit", (e) => {
    e.preventDefault();
    const q = new URLSearchParams();
    for (const [name, , type] of fields) {
      let v = form.elements[name].value.trim();
      if (v && type === "time") {
        v = (v.length === 16 ? v + ":00" : v.slice(0, 19)) + "Z";
        if (Number.isNaN(Date.parse(v))) {
          return notify("Not a date and time: " + form.elements[name].value, "error");
        }
      }
      if (v) q.set(name, v);
    }
    if (q.get("since") && q.get("until") && Date.parse(q.get("since")) >= Date.parse(q.get("until"))) {
      return notify("The start of the period must come before its end.", "error");
    }
    go(base + (q.toString() ? "?" + q : ""));
  });
  return form;
}

/** The filter parameters present in params, as a query string to append. */
function filterQuery(params, names) {
  const q = new URLSearchParams();
  for (const name of names) if (params.get(name)) q.set(name, params.get(name));
  return q.toString() ? "&" + q : "";
}

const AUDIT_FILTERS = [
  ["principal", "Who"],
  ["operation", "Operation"],
  ["bucket", "Bucket"],
  ["status", "Status"],
  ["since", "From (UTC)", "time"],
  ["until", "Until (UTC, excluded)", "time"],
];

async function auditView(params) {
  const after = Number(params.get("after") || 0);
  const filters = AUDIT_FILTERS.map(([n]) => n);
  const verifyOut = el("p", { id: "audit-verdict", "aria-live": "polite" });
  const list = el("div", { class: "table-wrap" }, el("p", {}, "Loading…"));
  show(
    "Audit log",
    el(
      "div",
      { class: "row" },
      el("button", {
        type: "button",
        id: "audit-verify",
        onclick: async () => {
          await attempt(async () => {
            const v = await adminJson("GET", "/audit/verify");
            verifyOut.textContent = v.ok
              ? "The chain is intact: " + v.entries + " entries verified."
              : "The chain is broken at entry " + v.first_bad_seq + ".";
            verifyOut.className = v.ok ? "notice ok" : "notice error";
          });
        },
      }, "Verify the chain"),
      verifyOut,
    ),
    filterForm("audit-filter", "#/audit", params, AUDIT_FILTERS),
    list,
  );
  let page;
  try {
    page = await adminJson(
      "GET",
      "/audit?limit=100&after_seq=" + after + filterQuery(params, filters),
    );
  } catch (err) {
    list.replaceChildren(el("p", { role: "alert", class: "notice error" }, err.message));
    return;
  }
  list.replaceChildren(
    el(
      "table",
      { id: "audit" },
      el("caption", { class: "sr-only" }, "Audit entries"),
      el(
        "thead",
        {},
        el(
          "tr",
          {},
          ["#", "Time", "Who", "Operation", "Target", "Status"].map((t) =>
            el("th", { scope: "col" }, t)
          ),
        ),
      ),
      el(
        "tbody",
        {},
        page.entries.map((e) =>
          el(
            "tr",
            {},
            el("td", {}, String(e.seq)),
            el("td", { class: "time" }, formatDate(e.time, true)),
            el("td", {}, e.principal + " " + e.source),
            el("td", {}, e.operation),
            el("td", { class: "target" }, [e.bucket, e.key].filter(Boolean).join("/")),
            el("td", {}, String(e.status) + (e.error_code ? " " + e.error_code : "")),
          )
        ),
      ),
    ),
    ...(page.next_after_seq
      ? [el("a", {
        class: "button",
        href: "#/audit?after=" + page.next_after_seq + filterQuery(params, filters),
      }, "Next page")]
      : []),
  );
}

const ERROR_FILTERS = [
  ["level", "Level (warn or error)"],
  ["code", "Code"],
  ["bucket", "Bucket"],
  ["since", "From (UTC)", "time"],
  ["until", "Until (UTC, excluded)", "time"],
];

async function errorsView(params) {
  const after = Number(params.get("after") || 0);
  const filters = ERROR_FILTERS.map(([n]) => n);
  const list = el("div", { class: "table-wrap" }, el("p", {}, "Loading…"));
  show("Error log", filterForm("error-filter", "#/errors", params, ERROR_FILTERS), list);
  try {
    const page = await adminJson(
      "GET",
      "/errors?limit=100&after_id=" + after + filterQuery(params, filters),
    );
    list.replaceChildren(
      page.errors.length === 0 ? el("p", { id: "no-errors" }, "No errors recorded.") : el(
        "table",
        { id: "errors" },
        el("caption", { class: "sr-only" }, "Errors, oldest first"),
        el(
          "thead",
          {},
          el(
            "tr",
            {},
            ["Time", "Level", "Source", "Code", "Message"].map((t) =>
              el("th", { scope: "col" }, t)
            ),
          ),
        ),
        el(
          "tbody",
          {},
          page.errors.map((e) =>
            el(
              "tr",
              {},
              el("td", { class: "time" }, formatDate(e.time, true)),
              el("td", {}, e.level),
              el("td", {}, e.source),
              el("td", {}, e.code),
              el("td", {}, e.message),
            )
          ),
        ),
      ),
      ...(page.next_after_id
        ? [el("a", {
          class: "button",
          href: "#/errors?after=" + page.next_after_id + filterQuery(params, filters),
        }, "Next page")]
        : []),
    );
  } catch (err) {
    list.replaceChildren(el("p", { role: "alert", class: "notice error" }, err.message));
  }
}

async function healthView() {
  const list = el("div", { class: "table-wrap" }, el("p", {}, "Loading…"));
  show("Drives", list);
  try {
    const { drives } = await adminJson("GET", "/drives");
    const heal = await adminJson("GET", "/heal");
    const scrub = await adminJson("GET", "/scrub");
    list.replaceChildren(
      el(
        "table",
        { id: "drives" },
        el(
          "thead",
          {},
          el(
            "tr",
            {},
            ["Drive", "Path", "State", "Errors", "Needs heal"].map((t) =>
              el("th", { scope: "col" }, t)
            ),
          ),
        ),
        el(
          "tbody",
          {},
          drives.map((d) =>
            el(
              "tr",
              {},
              el("td", {}, String(d.id)),
              el("td", {}, d.path),
              el("td", {}, d.state),
              el("td", {}, String(d.errors) + (d.lastError ? " (last: " + d.lastError + ")" : "")),
              el("td", {}, d.needsHeal ? "yes" : "no"),
            )
          ),
        ),
      ),
      el("h2", {}, "Healing"),
      factsOf("heal-status", heal),
      el("button", {
        type: "button",
        id: "heal-now",
        onclick: async () => {
          if (await attempt(() => adminJson("POST", "/heal"), "Healing started.")) healthView();
        },
      }, "Heal all drives now"),
      el("h2", {}, "Scrub"),
      factsOf("scrub-status", scrub),
      el("button", {
        type: "button",
        id: "scrub-now",
        onclick: async () => {
          if (await attempt(() => adminJson("POST", "/scrub?wait=false"), "Scrub started.")) {
            healthView();
          }
        },
      }, "Scrub now"),
    );
  } catch (err) {
    list.replaceChildren(el("p", { role: "alert", class: "notice error" }, err.message));
  }
}

/** A status object as a list of its fields (nested values as JSON). */
function factsOf(id, object) {
  return el(
    "dl",
    { class: "facts", id },
    Object.entries(object).map(([k, v]) => [
      el("dt", {}, k.replace(/_/g, " ").replace(/([a-z])([A-Z])/g, "$1 $2").toLowerCase()),
      el("dd", {}, v !== null && typeof v === "object" ? JSON.stringify(v) : String(v)),
    ]),
  );
}

/** A table from rows of cells, with a caption for screen readers. */
function simpleTable(id, caption, headers, rows) {
  return el(
    "table",
    { id },
    el("caption", { class: "sr-only" }, caption),
    el("thead", {}, el("tr", {}, headers.map((t) => el("th", { scope: "col" }, t)))),
    el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c) => el("td", {}, c))))),
  );
}

async function directoryView() {
  const list = el("div", { class: "table-wrap" }, el("p", {}, "Loading…"));
  const form = el(
    "form",
    { class: "card", id: "mapping-form" },
    el("h2", {}, "Map a directory group or user"),
    el(
      "p",
      {},
      el("label", { for: "mapping-kind" }, "Kind"),
      el(
        "select",
        { id: "mapping-kind" },
        el("option", { value: "groups" }, "group"),
        el("option", { value: "users" }, "user"),
      ),
    ),
    el(
      "p",
      {},
      el("label", { for: "mapping-name" }, "Name"),
      el("input", { id: "mapping-name", required: true, autocomplete: "off" }),
    ),
    el(
      "p",
      {},
      el(
        "label",
        { for: "mapping-access" },
        "Bucket access, one a line: bucket=read|write|readwrite|none",
      ),
      el("textarea", { id: "mapping-access", rows: 3, spellcheck: "false" }),
    ),
    el(
      "p",
      {},
      el(
        "label",
        { class: "inline" },
        el("input", { type: "checkbox", id: "mapping-admin" }),
        " Members are administrators",
      ),
    ),
    el("button", { type: "submit", class: "primary" }, "Save mapping"),
  );
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    const access = document.getElementById("mapping-access").value.split("\n")
      .map((l) => l.trim()).filter(Boolean).map((l) => {
        const [bucket, permission] = l.split("=").map((x) => x.trim());
        return { bucket, permission };
      });
    const kind = document.getElementById("mapping-kind").value;
    const name = document.getElementById("mapping-name").value.trim();
    const ok = await attempt(
      () =>
        adminJson("PUT", "/ldap/" + kind + "/" + encodeURIComponent(name), {
          bucket_access: access,
          is_admin: document.getElementById("mapping-admin").checked,
        }),
      "Mapping saved.",
    );
    if (ok) directoryView();
  });
  show("Directory mappings", list, form);
  try {
    const { mappings } = await adminJson("GET", "/ldap");
    list.replaceChildren(
      mappings.length === 0
        ? el("p", {}, "No mappings: directory users have no access yet.")
        : simpleTable(
          "mappings",
          "Directory mappings",
          ["Kind", "Name", "Bucket access", "Admin", "Actions"],
          mappings.map((m) => [
            m.kind,
            m.name,
            m.bucket_access.map((a) => a.bucket + ": " + a.permission).join(", ") || "none",
            m.is_admin ? "yes" : "no",
            el("button", {
              type: "button",
              class: "danger",
              "aria-label": "Delete mapping of " + m.kind + " " + m.name,
              onclick: async () => {
                const path = "/ldap/" + m.kind + "s/" + encodeURIComponent(m.name);
                if (
                  await attempt(() => adminJson("DELETE", path), "Mapping deleted.")
                ) directoryView();
              },
            }, "Delete"),
          ]),
        ),
    );
  } catch (err) {
    list.replaceChildren(el("p", { role: "alert", class: "notice error" }, err.message));
  }
}

async function notifyView() {
  const list = el("div", { class: "table-wrap" }, el("p", {}, "Loading…"));
  show("Notification targets", list);
  try {
    const { targets } = await adminJson("GET", "/notify/targets");
    list.replaceChildren(
      targets.length === 0
        ? el("p", {}, "No notification targets are configured (STORE_NOTIFY_* settings).")
        : simpleTable(
          "targets",
          "Notification targets",
          ["Target", "Health", "Queued", "Delivered", "Failures", "Last error"],
          targets.map((t) => [
            t.kind + ":" + t.id,
            t.healthy ? "healthy" : "failing",
            String(t.queue_depth),
            String(t.delivered),
            String(t.failures),
            t.last_error ? t.last_error + " (" + formatDate(t.last_error_at) + ")" : "",
          ]),
        ),
    );
  } catch (err) {
    list.replaceChildren(el("p", { role: "alert", class: "notice error" }, err.message));
  }
}

/** Totals read from the Prometheus text: requests, bytes in and out, seconds spent. */
function metricTotals(textBody) {
  const totals = { requests: 0, received: 0, sent: 0, seconds: 0 };
  const names = {
    store_requests_total: "requests",
    store_received_bytes_total: "received",
    store_sent_bytes_total: "sent",
    store_request_duration_seconds_sum: "seconds",
  };
  for (const line of textBody.split("\n")) {
    if (line.startsWith("#")) continue;
    const m = /^([a-z_]+)(\{[^}]*\})?\s+([0-9.eE+-]+)/.exec(line);
    if (m && names[m[1]]) totals[names[m[1]]] += Number(m[3]);
  }
  return totals;
}

/** An SVG line chart of the last samples, with its latest value in words for screen readers. */
function chart(title, values, unit) {
  const w = 300;
  const h = 80;
  const max = Math.max(...values, 1e-9);
  const step = values.length > 1 ? w / (values.length - 1) : w;
  const points = values.map((v, i) =>
    (i * step).toFixed(1) + "," + (h - (v / max) * (h - 4) - 2).toFixed(1)
  )
    .join(" ");
  const ns = "http://www.w3.org/2000/svg";
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", "0 0 " + w + " " + h);
  svg.setAttribute("class", "chart");
  svg.setAttribute("aria-hidden", "true");
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", points);
  svg.append(line);
  const last = values.length ? values[values.length - 1] : 0;
  return el(
    "figure",
    { class: "card" },
    el(
      "figcaption",
      {},
      title + ": " + last.toFixed(2) + " " + unit + " (peak " + max.toFixed(2) + ")",
    ),
    svg,
  );
}

/** Samples older than this are dropped from the charts. */
const CHART_SPAN_MS = 3600 * 1000;

async function metricsView() {
  const box = el(
    "div",
    { id: "charts", class: "charts" },
    el("p", {}, "Reading the last hour…"),
  );
  const span = el("p", { id: "metrics-span", "aria-live": "polite" });
  show(
    "Metrics",
    el(
      "p",
      {},
      "Requests, bytes and latency: the last hour from the samples the server keeps every 10 " +
        "seconds, then a sample every 5 seconds while this page is open.",
    ),
    span,
    box,
  );
  const samples = [];
  try {
    const history = await (await request("GET", "/console/api/metrics/history")).json();
    samples.push(...history.samples);
  } catch (err) {
    box.replaceChildren(el("p", { role: "alert", class: "notice error" }, err.message));
    return;
  }
  const hash = location.hash;
  const tick = async () => {
    if (location.hash !== hash || !state.session) return;
    try {
      const res = await request("GET", "/console/api/metrics");
      samples.push({ at: Date.now(), ...metricTotals(await res.text()) });
    } catch (err) {
      box.replaceChildren(el("p", { role: "alert", class: "notice error" }, err.message));
      return;
    }
    while (samples.length > 2 && samples[samples.length - 1].at - samples[0].at > CHART_SPAN_MS) {
      samples.shift();
    }
    const rates = { requests: [], received: [], sent: [], latency: [] };
    for (let i = 1; i < samples.length; i++) {
      const a = samples[i - 1];
      const b = samples[i];
      const dt = Math.max(b.at - a.at, 1) / 1000;
      const n = b.requests - a.requests;
      rates.requests.push(n / dt);
      rates.received.push((b.received - a.received) / dt / 1024);
      rates.sent.push((b.sent - a.sent) / dt / 1024);
      rates.latency.push(n > 0 ? ((b.seconds - a.seconds) / n) * 1000 : 0);
    }
    if (samples.length > 2) {
      span.textContent = "From " + formatDate(new Date(samples[0].at).toISOString(), true) +
        " to now (" + samples.length + " samples).";
      box.replaceChildren(
        chart("Requests", rates.requests, "per second"),
        chart("Received", rates.received, "KiB/s"),
        chart("Sent", rates.sent, "KiB/s"),
        chart("Mean latency", rates.latency, "ms"),
      );
    }
    setTimeout(tick, samples.length < 3 ? 1000 : 5000);
  };
  tick();
}

// ---------- start ----------

async function start() {
  try {
    state.ldap = (await (await fetch("/console/api/config")).json()).ldap;
    const res = await fetch("/console/api/session", { credentials: "same-origin" });
    state.session = res.ok ? await res.json() : null;
  } catch {
    state.session = null;
  }
  globalThis.addEventListener("hashchange", () => {
    // A message does not follow the user to another screen, unless its action led there
    // ("Folder created" on the new folder's screen).
    if (!state.keepNotice) clearNotices();
    state.keepNotice = false;
    route();
  });
  route();
}

start();
`;
