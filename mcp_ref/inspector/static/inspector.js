// mcp-ref inspect: the page.  Plain JavaScript, no build step, nothing from another host.
//
// Rules this file keeps (the Content-Security-Policy enforces the first; review enforces the rest):
//  - no inline script, no inline event handler, no style attribute: everything is wired here;
//  - every string that came from a server (or from a loaded file) enters the DOM as text
//    (textContent, a text node, an input's value), never as markup: this file has no innerHTML;
//  - a URL from a server becomes a link or a source only after a check: the spec link must be
//    https, images and audio are data: URLs this page builds from a checked media type and base64,
//    and a URL-mode elicitation opens only on the person's click, with noopener.
//  - an object keyed by names a server chose is a dict() (no prototype), read with own().
// The app's routes are relative (the page lives at /TOKEN/): see the inspector's docs.
"use strict";

(function () {
  // ---------------------------------------------------------------- small helpers

  /** An element: el("li", {className: "x"}, "text", child, ...); strings become text nodes. */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    if (props) {
      for (const [key, value] of Object.entries(props)) {
        if (value === undefined || value === null) continue;
        if (key === "dataset") Object.assign(node.dataset, value);
        else if (key === "on") for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
        else node[key] = value;
      }
    }
    append(node, children);
    return node;
  }

  function append(node, children) {
    for (const child of children) {
      if (child === undefined || child === null || child === false) continue;
      if (Array.isArray(child)) append(node, child);
      else if (child instanceof Node) node.appendChild(child);
      else node.appendChild(document.createTextNode(String(child)));
    }
    return node;
  }

  const $ = (id) => document.getElementById(id);
  const clear = (node) => { while (node.firstChild) node.removeChild(node.firstChild); return node; };
  const show = (node, yes) => { node.hidden = !yes; return node; };
  const asText = (value) => (value === undefined || value === null ? "" : typeof value === "string" ? value : JSON.stringify(value));
  const pretty = (value) => { try { return JSON.stringify(value, null, 2); } catch (e) { return String(value); } };
  const isObject = (value) => value !== null && typeof value === "object" && !Array.isArray(value);
  // An object keyed by names a server chose (a property's, an argument's, a variable's): with no
  // prototype, "__proto__" or "constructor" is a key like any other (on {}, assigning "__proto__"
  // sets the prototype and reading "constructor" finds Object); JSON.stringify writes it all.
  const dict = () => Object.create(null);
  /** object[key] when it is object's own, else undefined (never what Object.prototype has). */
  const own = (object, key) => (isObject(object) && Object.hasOwn(object, key) ? object[key] : undefined);

  function showError(box, error) {
    if (!error) { show(clear(box), false); return; }
    clear(box).appendChild(document.createTextNode(errorText(error)));
    show(box, true);
  }

  function errorText(error) {
    if (error instanceof ApiError) {
      const code = error.code === null || error.code === undefined ? "" : ` (${error.code})`;
      const data = error.data === undefined || error.data === null ? "" : `\n${pretty(error.data)}`;
      return `${error.message}${code}${data}`;
    }
    return String(error && error.message ? error.message : error);
  }

  // ---------------------------------------------------------------- the app's API

  class ApiError extends Error {
    constructor(message, code, data, status) {
      super(message);
      this.code = code;
      this.data = data;
      this.status = status;
    }
  }

  /** POST ./api/NAME with a JSON body; the JSON answer, or an ApiError. */
  async function api(name, body) {
    let response;
    try {
      response = await fetch(`api/${name}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body || {}),
        cache: "no-store",
        credentials: "same-origin",
      });
    } catch (e) {
      throw new ApiError("the inspector did not answer (is it still running?)", null, null, 0);
    }
    let answer = null;
    try { answer = await response.json(); } catch (e) { answer = null; }
    if (answer && isObject(answer.error)) {
      throw new ApiError(asText(answer.error.message) || "error", answer.error.code, answer.error.data, response.status);
    }
    if (!response.ok || answer === null) {
      throw new ApiError(`the inspector answered HTTP ${response.status}`, null, null, response.status);
    }
    return answer;
  }

  async function getJson(path) {
    const response = await fetch(path, { cache: "no-store", credentials: "same-origin" });
    if (!response.ok) throw new ApiError(`HTTP ${response.status}`, null, null, response.status);
    return response.json();
  }

  // ---------------------------------------------------------------- tabs

  function selectTab(name) {
    for (const tab of document.querySelectorAll("#tabs [role=tab]")) {
      const on = tab.dataset.panel === name;
      tab.setAttribute("aria-selected", on ? "true" : "false");
      show($(`panel-${tab.dataset.panel}`), on);
    }
  }
  for (const tab of document.querySelectorAll("#tabs [role=tab]")) {
    tab.addEventListener("click", () => selectTab(tab.dataset.panel));
  }

  // ---------------------------------------------------------------- connection state

  let state = { connected: false, connecting: true };

  /** Shows the connection's state; lists the server's features again on a new connection (or
   *  with ``relist``: a reconnect asked on this page, maybe to a server launched again). */
  function renderState(next, relist) {
    const wasConnected = state.connected;
    const previousVersion = state.protocol_version;
    state = next || {};
    // the conversation's bounds (the state says them): the page keeps no more than it does
    if (Number.isSafeInteger(state.max_records) && state.max_records > 0) maxRecords = state.max_records;
    if (Number.isSafeInteger(state.max_bytes) && state.max_bytes > 0) maxBytes = state.max_bytes;
    const status = $("status");
    if (streamLost && !replay) {
      status.dataset.state = "error";
      status.textContent = "the inspector is not answering: reconnecting…";
    } else if (replay) {
      status.dataset.state = "replay";
      status.textContent = "replay";
    } else if (state.connected) {
      status.dataset.state = "connected";
      status.textContent = `connected · ${asText(state.protocol_version)}`;
    } else if (state.connecting) {
      status.dataset.state = "connecting";
      status.textContent = "connecting…";
    } else {
      status.dataset.state = state.error ? "error" : "closed";
      status.textContent = state.error ? "not connected" : "closed";
    }
    $("target").textContent = asText(state.target);
    $("fact-target").textContent = asText(state.target);
    $("fact-transport").textContent = asText(state.transport);
    $("fact-era").textContent = state.era ? `${state.era} (${state.era === "modern" ? "2026-07-28, no handshake" : "initialize handshake"})` : "";
    $("fact-revision").textContent = asText(state.protocol_version);
    const info = isObject(state.server_info) ? state.server_info : {};
    $("fact-server").textContent = [info.title && info.title !== info.name ? `${asText(info.title)} —` : "", asText(info.name), info.version ? `v${asText(info.version)}` : ""].filter(Boolean).join(" ");
    $("fact-instructions").textContent = asText(state.instructions);
    document.title = info.name ? `${asText(info.name)} · mcp-ref inspect` : "mcp-ref inspect";
    $("server-capabilities").textContent = pretty(state.capabilities || {});
    $("client-capabilities").textContent = pretty(state.client_capabilities || {});
    $("connection-error-text").textContent = asText(state.error);
    show($("connection-error"), Boolean(state.error) && !state.connected);
    $("reconnect-other").textContent = state.era === "modern" ? "Reconnect in the handshake era" : state.era === "handshake" ? "Reconnect in the modern era" : "Reconnect in the other era";
    $("reconnect-other").disabled = !state.era || Boolean(state.connecting);
    $("reconnect").disabled = Boolean(state.connecting);
    if (Array.isArray(state.roots) && !rootsEdited) renderRoots(state.roots);
    if (state.log_level !== undefined && state.log_level !== null) $("log-level").value = asText(state.log_level);
    if (state.connected && (relist || !wasConnected || previousVersion !== state.protocol_version)) onConnected();
    if (!state.connected) {
      for (const call of calls.values()) call.finish();
    }
  }

  async function connect(era) {
    const buttons = [$("reconnect"), $("reconnect-other"), $("retry")];
    for (const button of buttons) button.disabled = true;
    try {
      renderState(await api("connect", era ? { era } : {}), true);
    } catch (e) {
      renderState({ ...state, connected: false, connecting: false, error: errorText(e) });
    } finally {
      for (const button of buttons) button.disabled = false;
      renderState(state);
    }
  }
  // without an era: the command line's (--era), as the first connect had it
  $("reconnect").addEventListener("click", () => connect(state.era || null));
  $("retry").addEventListener("click", () => connect(null));
  $("reconnect-other").addEventListener("click", () => connect(state.era === "modern" ? "handshake" : "modern"));

  function onConnected() {
    const caps = isObject(state.capabilities) ? state.capabilities : {};
    lists.tools.reset(Boolean(caps.tools));
    lists.resources.reset(Boolean(caps.resources));
    lists.templates.reset(Boolean(caps.resources));
    lists.prompts.reset(Boolean(caps.prompts));
    $("tasks-refresh").disabled = false;
  }

  // ---------------------------------------------------------------- paged lists

  /** One listing (tools, resources, templates, prompts, tasks): pages follow nextCursor on "More". */
  class PagedList {
    constructor(what, listId, moreId, renderItem) {
      this.what = what;
      this.list = $(listId);
      this.more = $(moreId);
      this.renderItem = renderItem;
      this.items = [];
      this.cursor = null;
      this.generation = 0;
      this.loading = 0; // listings in flight
      this.again = false; // asked to list again while one was in flight
      this.more.addEventListener("click", () => this.load());
    }

    /** Listed again from the first page, coalesced: while a listing is in flight this only asks
     *  for one more when it ends, so a flood of list_changed makes two listings, not one each. */
    relist() {
      if (this.loading > 0) { this.again = true; return; }
      this.reset(true);
    }

    reset(load) {
      this.again = false;
      this.generation += 1;
      this.items = [];
      this.cursor = null;
      clear(this.list);
      show(this.more, false);
      if (load) this.load();
    }

    async load() {
      const generation = this.generation;
      this.more.disabled = true;
      this.loading += 1;
      try {
        const answer = await api("list", { what: this.what, cursor: this.cursor });
        if (generation !== this.generation) return;
        const items = Array.isArray(answer.items) ? answer.items : [];
        for (const item of items) {
          if (!isObject(item)) continue;
          this.items.push(item);
          this.list.appendChild(this.renderItem(item));
        }
        this.cursor = typeof answer.nextCursor === "string" ? answer.nextCursor : null;
        show(this.more, this.cursor !== null);
      } catch (e) {
        if (generation !== this.generation) return;
        this.list.appendChild(el("li", { className: "error-box" }, `listing ${this.what} failed: ${errorText(e)}`));
      } finally {
        this.more.disabled = false;
        this.loading -= 1;
        if (this.loading === 0 && this.again) this.reset(true);
      }
    }
  }

  function itemRow(kind, item, name, what, onOpen) {
    const button = el("button", { type: "button", className: "name", on: { click: () => { selectItem(li); onOpen(item); } } }, name);
    const key = kind === "resource" ? item.uri : item.name || item.uri || item.uriTemplate;
    const li = el("li", { dataset: { kind, name: asText(key) } }, button, el("span", { className: "what" }, what));
    return li;
  }

  function selectItem(li) {
    for (const other of li.parentNode.children) other.classList.toggle("selected", other === li);
  }

  const lists = {
    tools: new PagedList("tools", "tools-list", "tools-more", (tool) =>
      itemRow("tool", tool, asText(tool.name), [tool.title ? `${asText(tool.title)} — ` : "", asText(tool.description)], openTool)),
    resources: new PagedList("resources", "resources-list", "resources-more", (resource) => resourceRow(resource)),
    templates: new PagedList("templates", "templates-list", "templates-more", (template) =>
      itemRow("template", template, asText(template.name || template.uriTemplate), [asText(template.uriTemplate), " ", asText(template.description)], openTemplate)),
    prompts: new PagedList("prompts", "prompts-list", "prompts-more", (prompt) =>
      itemRow("prompt", prompt, asText(prompt.name), [prompt.title ? `${asText(prompt.title)} — ` : "", asText(prompt.description)], openPrompt)),
    tasks: new PagedList("tasks", "tasks-list", "tasks-more", (task) => taskRow(task)),
  };
  $("tools-refresh").addEventListener("click", () => lists.tools.reset(true));
  $("resources-refresh").addEventListener("click", () => { lists.resources.reset(true); lists.templates.reset(true); });
  $("prompts-refresh").addEventListener("click", () => lists.prompts.reset(true));
  $("tasks-refresh").addEventListener("click", () => lists.tasks.reset(true));

  // ---------------------------------------------------------------- forms from JSON Schema

  /** The schema's type: the first of a list that is not "null"; guessed from enum/properties. */
  function schemaType(schema) {
    if (!isObject(schema)) return null;
    let type = schema.type;
    if (Array.isArray(type)) type = type.find((t) => t !== "null") || null;
    if (!type && Array.isArray(schema.enum)) type = "string";
    if (!type && isObject(schema.properties)) type = "object";
    return typeof type === "string" ? type : null;
  }

  function enumChoices(schema) {
    if (Array.isArray(schema.enum)) return schema.enum.map((value, i) => ({ value, title: Array.isArray(schema.enumNames) ? asText(schema.enumNames[i]) : asText(value) }));
    const options = Array.isArray(schema.oneOf) ? schema.oneOf : Array.isArray(schema.anyOf) ? schema.anyOf : null;
    if (options && options.length && options.every((o) => isObject(o) && "const" in o)) {
      return options.map((o) => ({ value: o.const, title: asText(o.title || o.const) }));
    }
    return null;
  }

  function label(text, required) {
    return el("span", { className: "label" }, text, required ? el("span", { className: "required-mark", title: "required" }, "*") : null);
  }

  /**
   * An editor for one value of `schema`: {node, get(), set(value)}.  get() returns undefined for
   * "left empty" (the key is then left out of the object); anything the form cannot express is a
   * JSON text field.
   */
  function editor(schema, required, path) {
    schema = isObject(schema) ? schema : {};
    const type = schemaType(schema);
    const choices = enumChoices(schema);
    const id = `f-${path.join("-").replace(/[^A-Za-z0-9_-]/g, "_")}-${++editorCount}`;
    if (choices) {
      const select = el("select", { id, name: path.join(".") });
      if (!required || !("default" in schema)) select.appendChild(el("option", { value: "" }, required ? "(choose)" : "(unset)"));
      choices.forEach((choice, i) => select.appendChild(el("option", { value: String(i) }, choice.title)));
      const set = (value) => { const i = choices.findIndex((c) => JSON.stringify(c.value) === JSON.stringify(value)); select.value = i >= 0 ? String(i) : ""; };
      if ("default" in schema) set(schema.default);
      return { node: select, id, get: () => (select.value === "" ? undefined : choices[Number(select.value)].value), set };
    }
    if (type === "string") {
      const multiline = (schema.maxLength || 0) > 200 || schema.format === "textarea";
      const input = multiline ? el("textarea", { id, rows: 3 }) : el("input", { id, type: schema.format === "email" ? "email" : schema.format === "uri" ? "url" : schema.format === "date" ? "date" : "text" });
      input.name = path.join(".");
      if (typeof schema.default === "string") input.value = schema.default;
      if (required) input.required = true;
      return { node: input, id, get: () => (input.value === "" && !required ? undefined : input.value), set: (v) => { input.value = asText(v); } };
    }
    if (type === "number" || type === "integer") {
      const input = el("input", { id, type: "number", name: path.join("."), step: type === "integer" ? "1" : "any" });
      if (typeof schema.minimum === "number") input.min = String(schema.minimum);
      if (typeof schema.maximum === "number") input.max = String(schema.maximum);
      if (typeof schema.default === "number") input.value = String(schema.default);
      if (required) input.required = true;
      return {
        node: input, id,
        get: () => { if (input.value.trim() === "") return undefined; const n = Number(input.value); return Number.isNaN(n) ? input.value : n; },
        set: (v) => { input.value = v === undefined || v === null ? "" : String(v); },
      };
    }
    if (type === "boolean") {
      if (required || typeof schema.default === "boolean") {
        const input = el("input", { id, type: "checkbox", name: path.join(".") });
        input.checked = schema.default === true;
        return { node: input, id, get: () => input.checked, set: (v) => { input.checked = Boolean(v); } };
      }
      const select = el("select", { id, name: path.join(".") }, el("option", { value: "" }, "(unset)"), el("option", { value: "true" }, "true"), el("option", { value: "false" }, "false"));
      return { node: select, id, get: () => (select.value === "" ? undefined : select.value === "true"), set: (v) => { select.value = v === undefined ? "" : String(Boolean(v)); } };
    }
    if (type === "array" && isObject(schema.items) && schemaType(schema.items)) return arrayEditor(schema, required, path, id);
    if (type === "object" && isObject(schema.properties)) return objectEditor(schema, path, id);
    // anything else (anyOf, $ref, free-form objects, arrays of anything): raw JSON
    const area = el("textarea", { id, rows: 3, spellcheck: false, placeholder: "JSON" });
    area.name = path.join(".");
    if ("default" in schema) area.value = JSON.stringify(schema.default);
    return {
      node: area, id,
      get: () => { if (area.value.trim() === "") return undefined; try { return JSON.parse(area.value); } catch (e) { throw new Error(`${path.join(".")}: not JSON (${e.message})`); } },
      set: (v) => { area.value = v === undefined ? "" : JSON.stringify(v); },
    };
  }
  let editorCount = 0;

  function arrayEditor(schema, required, path, id) {
    const box = el("div", { className: "array", id });
    const rows = el("div");
    const entries = [];
    const add = (value) => {
      const item = editor(schema.items, true, [...path, String(entries.length)]);
      const row = el("div", { className: "array-item" }, el("div", { className: "array-value" }, item.node));
      const entry = { item, row };
      row.appendChild(el("button", { type: "button", className: "remove", title: "remove this item", on: { click: () => { entries.splice(entries.indexOf(entry), 1); row.remove(); } } }, "−"));
      if (value !== undefined) item.set(value);
      entries.push(entry);
      rows.appendChild(row);
    };
    box.appendChild(rows);
    box.appendChild(el("button", { type: "button", className: "add", on: { click: () => add(undefined) } }, "+ item"));
    const set = (values) => { entries.splice(0).forEach((e) => e.row.remove()); if (Array.isArray(values)) values.forEach(add); };
    if (Array.isArray(schema.default)) set(schema.default);
    return {
      node: box, id,
      get: () => { const values = entries.map((e) => e.item.get()).filter((v) => v !== undefined); return values.length || required ? values : undefined; },
      set,
    };
  }

  function objectEditor(schema, path, id) {
    const fieldset = el("fieldset", { id }, path.length ? el("legend", null, path[path.length - 1]) : null);
    const fields = objectFields(schema, path, fieldset);
    return {
      node: fieldset, id,
      get: () => { const value = fields.get(); return Object.keys(value).length ? value : undefined; },
      set: fields.set,
    };
  }

  /** The fields of an object schema, appended to `container`: {get(), set(object), editors}. */
  function objectFields(schema, path, container, onField) {
    const properties = isObject(schema.properties) ? schema.properties : {};
    const requiredNames = Array.isArray(schema.required) ? schema.required : [];
    const editors = dict();
    for (const [name, property] of Object.entries(properties)) {
      const required = requiredNames.includes(name);
      const ed = editor(property, required, [...path, name]);
      editors[name] = ed;
      const title = isObject(property) && property.title ? `${asText(property.title)} (${name})` : name;
      const row = el("div", { className: "field", dataset: { field: name } },
        el("label", { htmlFor: ed.id }, label(title, required)), ed.node,
        isObject(property) && property.description ? el("span", { className: "hint" }, asText(property.description)) : null);
      container.appendChild(row);
      if (onField) onField(name, ed, row);
    }
    return {
      editors,
      get: () => {
        const value = dict();
        for (const [name, ed] of Object.entries(editors)) {
          const v = ed.get();
          if (v !== undefined) value[name] = v;
        }
        return value;
      },
      set: (value) => { for (const [name, ed] of Object.entries(editors)) ed.set(own(value, name)); },
    };
  }

  // ---------------------------------------------------------------- completion as you type

  /**
   * Completion for one text field: after typing settles (250 ms), ask api/complete and show the
   * values as buttons under the field (and in a datalist, for the browser's own dropdown).
   */
  function completeAsYouType(input, row, ref, argumentName, otherArguments) {
    const box = el("div", { className: "suggestions", dataset: { for: argumentName } });
    const list = el("datalist", { id: `${input.id}-list` });
    input.setAttribute("list", list.id);
    input.setAttribute("autocomplete", "off");
    row.appendChild(box);
    row.appendChild(list);
    let timer = null;
    let asked = 0;
    const ask = async () => {
      const mine = ++asked;
      let completion;
      try {
        const context = otherArguments();
        delete context[argumentName];
        const answer = await api("complete", { ref, argument: { name: argumentName, value: input.value }, context: Object.keys(context).length ? { arguments: context } : null });
        completion = isObject(answer.completion) ? answer.completion : {};
      } catch (e) {
        completion = { values: [], error: errorText(e) };
      }
      if (mine !== asked) return; // a newer keystroke asked again
      clear(box);
      clear(list);
      const values = Array.isArray(completion.values) ? completion.values.slice(0, 100) : [];
      for (const value of values) {
        const text = asText(value);
        list.appendChild(el("option", { value: text }));
        box.appendChild(el("button", { type: "button", className: "suggestion", on: { click: () => { input.value = text; clear(box); input.dispatchEvent(new Event("change")); } } }, text));
      }
      if (completion.hasMore || (typeof completion.total === "number" && completion.total > values.length)) box.appendChild(el("span", { className: "muted" }, "…more"));
      if (completion.error) box.appendChild(el("span", { className: "muted" }, `completion: ${completion.error}`));
    };
    input.addEventListener("input", () => { clearTimeout(timer); timer = setTimeout(ask, 250); });
    input.addEventListener("focus", () => { if (!box.firstChild) { clearTimeout(timer); timer = setTimeout(ask, 250); } });
  }

  // ---------------------------------------------------------------- tools

  let currentTool = null;
  let toolFields = null;
  let callCount = 0;
  const pageStamp = Date.now().toString(36);
  const calls = new Map(); // call id -> {progress(event), finish()}
  const cancelled = new Set(); // the call ids the person cancelled

  function openTool(tool) {
    currentTool = tool;
    show($("tool-view"), true);
    $("tool-name").textContent = tool.title ? `${asText(tool.title)} (${asText(tool.name)})` : asText(tool.name);
    $("tool-description").textContent = asText(tool.description);
    const fields = clear($("tool-fields"));
    const schema = isObject(tool.inputSchema) ? tool.inputSchema : { type: "object" };
    toolFields = objectFields(schema, [], fields);
    if (!Object.keys(toolFields.editors).length) fields.appendChild(el("p", { className: "muted" }, "No arguments."));
    $("tool-raw-toggle").checked = false;
    show($("tool-raw"), false);
    show(fields, true);
    const execution = isObject(tool.execution) ? tool.execution : {};
    const caps = isObject(state.capabilities) ? state.capabilities : {};
    const extensions = isObject(caps.extensions) ? Object.keys(caps.extensions) : [];
    const taskable = ["optional", "required"].includes(execution.taskSupport) || (state.era === "modern" && extensions.some((name) => /task/i.test(name)));
    show($("tool-task-label"), taskable);
    $("tool-task").checked = execution.taskSupport === "required";
    showError($("tool-error"), null);
    clear($("tool-result"));
    $("tool-result").classList.remove("is-error");
  }

  $("tool-raw-toggle").addEventListener("change", () => {
    const raw = $("tool-raw-toggle").checked;
    if (raw) {
      try { $("tool-raw").value = pretty(toolFields ? toolFields.get() : {}); } catch (e) { $("tool-raw").value = "{}"; }
    } else if (toolFields) {
      try { toolFields.set(JSON.parse($("tool-raw").value || "{}")); } catch (e) { showError($("tool-error"), new Error(`the raw JSON is not JSON: ${e.message}`)); }
    }
    show($("tool-raw"), raw);
    show($("tool-fields"), !raw);
  });

  $("tool-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!currentTool) return;
    let args;
    try {
      args = $("tool-raw-toggle").checked ? JSON.parse($("tool-raw").value || "{}") : toolFields.get();
      if (!isObject(args)) throw new Error("the arguments must be a JSON object");
    } catch (e) {
      showError($("tool-error"), e);
      return;
    }
    const callId = `c${pageStamp}-${++callCount}`;
    const progress = $("tool-progress");
    const progressText = $("tool-progress-text");
    const call = {
      progress(update) {
        if ($("tool-cancel").dataset.call !== callId) return; // an earlier call's late event
        show(progress, true);
        if (typeof update.total === "number" && update.total > 0) { progress.max = update.total; progress.value = Number(update.progress) || 0; }
        else progress.removeAttribute("value");
        progressText.textContent = [typeof update.total === "number" ? `${update.progress} of ${update.total}` : asText(update.progress), update.message ? `— ${asText(update.message)}` : ""].join(" ");
      },
      // kept a while after the call ends: its last progress events may come after its result
      finish() { cancelled.delete(callId); $("tool-cancel").disabled = true; $("tool-call").disabled = false; while (calls.size > 20) calls.delete(calls.keys().next().value); },
    };
    calls.set(callId, call);
    $("tool-call").disabled = true;
    $("tool-cancel").disabled = false;
    $("tool-cancel").dataset.call = callId;
    show(progress, false);
    progress.removeAttribute("value");
    progressText.textContent = "";
    $("tool-status").textContent = "calling…";
    showError($("tool-error"), null);
    clear($("tool-result"));
    $("tool-result").classList.remove("is-error");
    try {
      const answer = await api("call", { call: callId, name: currentTool.name, arguments: args, task: $("tool-task").checked && !$("tool-task-label").hidden });
      $("tool-status").textContent = "done";
      renderCallResult($("tool-result"), answer.result, answer.output_check);
    } catch (e) {
      $("tool-status").textContent = cancelled.has(callId) ? "cancelled" : "failed";
      showError($("tool-error"), e);
    } finally {
      call.finish();
    }
  });

  $("tool-cancel").addEventListener("click", async () => {
    const callId = $("tool-cancel").dataset.call;
    $("tool-cancel").disabled = true;
    cancelled.add(callId); // the call may end (cancelled) before this request is answered
    $("tool-status").textContent = "cancelling…";
    try {
      const answer = await api("cancel", { call: callId });
      if (!answer.cancelled && $("tool-status").textContent === "cancelling…") $("tool-status").textContent = "it had already finished";
    } catch (e) {
      showError($("tool-error"), e);
    }
  });

  /** A CallToolResult as a model sees it: content blocks, structuredContent (checked), isError. */
  function renderCallResult(box, result, outputCheck) {
    clear(box);
    if (!isObject(result)) { box.appendChild(el("pre", null, pretty(result))); return; }
    box.classList.toggle("is-error", result.isError === true);
    if (result.isError === true) box.appendChild(el("p", { className: "is-error-mark" }, "isError: true — the tool reports a failure (the model sees it)"));
    if (result.resultType === "task" || isObject(result.task)) {
      box.appendChild(el("p", null, "Answered with a task: see Tasks on the Client side."));
      box.appendChild(el("pre", { className: "json" }, pretty(result.task || result)));
    }
    const content = Array.isArray(result.content) ? result.content : [];
    for (const block of content) box.appendChild(renderContent(block));
    if ("structuredContent" in result) {
      const section = el("div", { className: "content structured" }, el("div", { className: "kind" }, "structuredContent"));
      if (isObject(outputCheck)) {
        const errors = Array.isArray(outputCheck.errors) ? outputCheck.errors : [];
        const verdict = outputCheck.valid === null ? ["unchecked", "– not checked against the tool's outputSchema"]
          : outputCheck.valid ? ["valid", "✓ valid against the tool's outputSchema"]
          : ["invalid", "✗ invalid against the tool's outputSchema"];
        section.appendChild(el("div", { className: `check ${verdict[0]}` }, verdict[1]));
        if (errors.length) section.appendChild(el("ul", { className: "errors" }, errors.map((e) => el("li", null, asText(e)))));
      }
      section.appendChild(el("pre", { className: "json" }, pretty(result.structuredContent)));
      box.appendChild(section);
    }
    if (!content.length && !("structuredContent" in result)) box.appendChild(el("p", { className: "muted" }, "(no content)"));
  }

  const IMAGE_TYPE = /^image\/[A-Za-z0-9.+-]+$/;
  const AUDIO_TYPE = /^audio\/[A-Za-z0-9.+-]+$/;
  const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

  /** A data: URL for base64 data of a media type this page allows, or null. */
  function dataUrl(mimeType, data, allowed) {
    if (typeof mimeType !== "string" || typeof data !== "string" || !allowed.test(mimeType)) return null;
    const compact = data.replace(/\s+/g, "");
    if (!BASE64.test(compact)) return null;
    return `data:${mimeType};base64,${compact}`;
  }

  function base64Size(data) {
    if (typeof data !== "string") return 0;
    const compact = data.replace(/\s+/g, "");
    return Math.floor((compact.length * 3) / 4) - (compact.endsWith("==") ? 2 : compact.endsWith("=") ? 1 : 0);
  }

  /** One content block (text, image, audio, resource_link, resource), every string as text. */
  function renderContent(block) {
    if (!isObject(block)) return el("pre", { className: "content" }, pretty(block));
    const type = asText(block.type);
    const box = el("div", { className: `content content-${type.replace(/[^a-z_]/g, "")}` }, el("div", { className: "kind" }, type));
    if (type === "text") {
      box.appendChild(el("pre", { className: "text" }, asText(block.text)));
    } else if (type === "image" || type === "audio") {
      const url = dataUrl(block.mimeType, block.data, type === "image" ? IMAGE_TYPE : AUDIO_TYPE);
      if (url && type === "image") box.appendChild(el("img", { src: url, alt: `image (${asText(block.mimeType)})` }));
      else if (url) box.appendChild(el("audio", { src: url, controls: true }));
      else box.appendChild(el("p", { className: "muted" }, `not shown: ${type} of type ${asText(block.mimeType)}`));
      box.appendChild(el("span", { className: "muted" }, `${asText(block.mimeType)}, ${base64Size(block.data)} bytes`));
    } else if (type === "resource_link") {
      box.appendChild(el("div", null, el("strong", null, asText(block.title || block.name)), " ", el("code", null, asText(block.uri)),
        block.mimeType ? ` (${asText(block.mimeType)})` : ""));
      if (block.description) box.appendChild(el("p", { className: "description" }, asText(block.description)));
      box.appendChild(el("button", { type: "button", on: { click: () => { selectTab("resources"); readResource(asText(block.uri)); } } }, "Read it"));
    } else if (type === "resource" && isObject(block.resource)) {
      box.appendChild(renderResourceContents(block.resource));
    } else {
      box.appendChild(el("pre", { className: "json" }, pretty(block)));
    }
    if (isObject(block.annotations)) box.appendChild(el("div", { className: "muted" }, `annotations: ${JSON.stringify(block.annotations)}`));
    return box;
  }

  /** One TextResourceContents / BlobResourceContents. */
  function renderResourceContents(contents) {
    const box = el("div", { className: "resource-contents" }, el("div", null, el("code", null, asText(contents.uri)), contents.mimeType ? ` (${asText(contents.mimeType)})` : ""));
    if (typeof contents.text === "string") {
      box.appendChild(el("pre", { className: "text" }, contents.text));
    } else if (typeof contents.blob === "string") {
      box.appendChild(el("p", { className: "blob" }, `blob: ${base64Size(contents.blob)} bytes`));
      const url = dataUrl(contents.mimeType, contents.blob, IMAGE_TYPE);
      if (url) box.appendChild(el("img", { src: url, alt: asText(contents.uri) }));
    }
    return box;
  }

  // ---------------------------------------------------------------- resources and templates

  const subscribed = new Set();
  let shownUri = null;

  function resourceRow(resource) {
    const uri = asText(resource.uri);
    const li = itemRow("resource", resource, asText(resource.title || resource.name || uri), [uri, resource.mimeType ? ` (${asText(resource.mimeType)})` : "", " ", asText(resource.description)], () => readResource(uri));
    li.dataset.uri = uri;
    const caps = isObject(state.capabilities) && isObject(state.capabilities.resources) ? state.capabilities.resources : {};
    if (caps.subscribe) {
      const button = el("button", { type: "button", className: "subscribe" }, subscribed.has(uri) ? "Unsubscribe" : "Subscribe");
      button.addEventListener("click", async () => {
        const on = !subscribed.has(uri);
        button.disabled = true;
        try {
          await api("subscribe", { uri, on });
          if (on) subscribed.add(uri); else subscribed.delete(uri);
          button.textContent = on ? "Unsubscribe" : "Subscribe";
          showError($("resource-error"), null);
        } catch (e) {
          showError($("resource-error"), e);
        } finally {
          button.disabled = false;
        }
      });
      li.appendChild(button);
    }
    return li;
  }

  let readsAsked = 0;
  async function readResource(uri) {
    shownUri = uri;
    const asked = ++readsAsked; // only the last read asked is shown: an older one may end later
    show($("resource-view"), true);
    $("resource-uri").textContent = uri;
    const box = $("resource-contents");
    try {
      const answer = await api("read", { uri });
      if (asked !== readsAsked) return;
      showError($("resource-error"), null);
      clear(box);
      const contents = isObject(answer.result) && Array.isArray(answer.result.contents) ? answer.result.contents : [];
      for (const item of contents) if (isObject(item)) box.appendChild(renderResourceContents(item));
      if (!contents.length) box.appendChild(el("p", { className: "muted" }, "(no contents)"));
    } catch (e) {
      if (asked === readsAsked) { clear(box); showError($("resource-error"), e); }
    }
  }

  function onResourceUpdated(uri) {
    const when = new Date().toLocaleTimeString();
    const updates = $("resource-updates");
    updates.insertBefore(el("li", { dataset: { uri } }, `${when}  updated: `, el("code", null, uri)), updates.firstChild);
    while (updates.children.length > 200) updates.lastChild.remove();
    if (uri === shownUri) rereadResource(uri);
  }

  // An updated resource on show is read again, coalesced: one read in flight, and one more
  // asked for while it is (a flood of resources/updated makes two reads, not one each). That one
  // more is of the resource on show when the running read ends: an update of the resource opened
  // meanwhile is asked for while another's read runs, and must not be lost with it.
  let rereading = false;
  let rereadAgain = false;
  async function rereadResource(uri) {
    if (rereading) { rereadAgain = true; return; }
    rereading = true;
    try {
      await readResource(uri);
    } finally {
      rereading = false;
    }
    if (rereadAgain) {
      rereadAgain = false;
      if (shownUri !== null) rereadResource(shownUri);
    }
  }

  /** The variables of an RFC 6570 URI template, with each one's operator. */
  function templateVariables(template) {
    const variables = [];
    for (const match of template.matchAll(/\{([+#./;?&]?)([^}]*)\}/g)) {
      for (const part of match[2].split(",")) {
        const name = part.replace(/\*$/, "").replace(/:\d+$/, "").trim();
        if (name && !variables.some((v) => v.name === name)) variables.push({ name, operator: match[1] });
      }
    }
    return variables;
  }

  /** RFC 6570 expansion for string values (levels 1 to 3; explode and prefix ignored). */
  function expandTemplate(template, values) {
    return template.replace(/\{([+#./;?&]?)([^}]*)\}/g, (all, operator, list) => {
      const names = list.split(",").map((p) => p.replace(/\*$/, "").replace(/:\d+$/, "").trim());
      const reserved = operator === "+" || operator === "#";
      const encode = (v) => (reserved ? encodeURI(v) : encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`));
      const defined = names.filter((n) => own(values, n) !== undefined && values[n] !== "");
      if (!defined.length) return "";
      const first = { "": "", "+": "", "#": "#", ".": ".", "/": "/", ";": ";", "?": "?", "&": "&" }[operator];
      const sep = { "": ",", "+": ",", "#": ",", ".": ".", "/": "/", ";": ";", "?": "&", "&": "&" }[operator];
      const named = operator === ";" || operator === "?" || operator === "&";
      return first + defined.map((n) => (named ? `${n}=${encode(values[n])}` : encode(values[n]))).join(sep);
    });
  }

  let currentTemplate = null;
  let templateInputs = dict();

  function openTemplate(template) {
    currentTemplate = template;
    show($("template-view"), true);
    $("template-name").textContent = asText(template.title || template.name);
    $("template-uri").textContent = asText(template.uriTemplate);
    const fields = clear($("template-fields"));
    templateInputs = dict();
    const uriTemplate = asText(template.uriTemplate);
    const values = () => { const v = dict(); for (const [n, input] of Object.entries(templateInputs)) if (input.value !== "") v[n] = input.value; return v; };
    const refresh = () => { $("template-expanded").textContent = expandTemplate(uriTemplate, values()); };
    for (const variable of templateVariables(uriTemplate)) {
      const input = el("input", { type: "text", id: `t-${++editorCount}`, name: variable.name, on: { input: refresh, change: refresh } });
      const row = el("div", { className: "field", dataset: { field: variable.name } }, el("label", { htmlFor: input.id }, label(variable.name, true)), input);
      fields.appendChild(row);
      templateInputs[variable.name] = input;
      if (isObject(state.capabilities) && state.capabilities.completions) {
        completeAsYouType(input, row, { type: "ref/resource", uri: uriTemplate }, variable.name, values);
      }
    }
    refresh();
  }

  $("template-form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (currentTemplate) readResource($("template-expanded").textContent);
  });

  // ---------------------------------------------------------------- prompts

  let currentPrompt = null;
  let promptInputs = dict();

  function openPrompt(prompt) {
    currentPrompt = prompt;
    show($("prompt-view"), true);
    $("prompt-name").textContent = prompt.title ? `${asText(prompt.title)} (${asText(prompt.name)})` : asText(prompt.name);
    $("prompt-description").textContent = asText(prompt.description);
    const fields = clear($("prompt-fields"));
    promptInputs = dict();
    const values = () => { const v = dict(); for (const [n, input] of Object.entries(promptInputs)) if (input.value !== "") v[n] = input.value; return v; };
    const args = Array.isArray(prompt.arguments) ? prompt.arguments : [];
    for (const argument of args) {
      if (!isObject(argument)) continue;
      const name = asText(argument.name);
      const input = el("input", { type: "text", id: `p-${++editorCount}`, name, required: argument.required === true });
      const row = el("div", { className: "field", dataset: { field: name } },
        el("label", { htmlFor: input.id }, label(argument.title ? `${asText(argument.title)} (${name})` : name, argument.required === true)), input,
        argument.description ? el("span", { className: "hint" }, asText(argument.description)) : null);
      fields.appendChild(row);
      promptInputs[name] = input;
      if (isObject(state.capabilities) && state.capabilities.completions) {
        completeAsYouType(input, row, { type: "ref/prompt", name: asText(prompt.name) }, name, values);
      }
    }
    if (!args.length) fields.appendChild(el("p", { className: "muted" }, "No arguments."));
    showError($("prompt-error"), null);
    clear($("prompt-messages"));
  }

  $("prompt-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    if (!currentPrompt) return;
    const args = dict();
    for (const [name, input] of Object.entries(promptInputs)) if (input.value !== "") args[name] = input.value;
    const box = clear($("prompt-messages"));
    try {
      const answer = await api("prompt", { name: currentPrompt.name, arguments: args });
      showError($("prompt-error"), null);
      const result = isObject(answer.result) ? answer.result : {};
      if (result.description) box.appendChild(el("p", { className: "description" }, asText(result.description)));
      for (const message of Array.isArray(result.messages) ? result.messages : []) box.appendChild(renderMessage(message));
    } catch (e) {
      showError($("prompt-error"), e);
    }
  });

  /** A prompt or sampling message: its role, then its content (one block or a list). */
  function renderMessage(message) {
    if (!isObject(message)) return el("pre", null, pretty(message));
    const role = asText(message.role);
    const box = el("div", { className: `message role-${role.replace(/[^a-z]/g, "")}` }, el("div", { className: "role" }, role));
    const content = Array.isArray(message.content) ? message.content : [message.content];
    for (const block of content) box.appendChild(renderContent(block));
    return box;
  }

  // ---------------------------------------------------------------- the client's side: asks

  const asks = new Map(); // ask id -> card

  function updateAskCount() {
    const count = asks.size;
    $("ask-count").textContent = String(count);
    show($("ask-count"), count > 0);
    show($("ask-banner"), count > 0);
    show($("asks-empty"), count === 0);
  }

  $("ask-banner").addEventListener("click", () => selectTab("client"));

  function onAsk(ask) {
    if (!isObject(ask) || typeof ask.ask !== "string" || asks.has(ask.ask)) return;
    const params = isObject(ask.params) ? ask.params : {};
    const card = el("div", { className: `ask ask-${ask.kind === "sampling" ? "sampling" : "elicitation"}`, dataset: { ask: ask.ask, kind: asText(ask.kind), mode: asText(ask.mode) } });
    const status = el("p", { className: "muted ask-status" });
    const errorBox = el("div", { className: "error-box", hidden: true });
    const answer = async (body) => {
      for (const button of card.querySelectorAll("button")) button.disabled = true;
      try {
        await api("answer", { ask: ask.ask, ...body });
        status.textContent = `answered: ${body.action}`;
      } catch (e) {
        showError(errorBox, e);
        for (const button of card.querySelectorAll("button")) button.disabled = false;
      }
    };
    if (typeof ask.expires === "number") status.textContent = `answer before ${new Date(ask.expires * 1000).toLocaleTimeString()}`;
    if (ask.kind === "sampling") {
      card.appendChild(el("h3", null, "Sampling: the server asks your language model (sampling/createMessage)"));
      if (params.systemPrompt) card.appendChild(el("p", null, el("strong", null, "System prompt: "), asText(params.systemPrompt)));
      card.appendChild(el("p", null, el("strong", null, "maxTokens: "), asText(params.maxTokens),
        params.temperature !== undefined ? `   temperature: ${asText(params.temperature)}` : "",
        params.includeContext ? `   includeContext: ${asText(params.includeContext)}` : ""));
      if (isObject(params.modelPreferences)) card.appendChild(el("p", { className: "muted" }, `model preferences: ${JSON.stringify(params.modelPreferences)}`));
      for (const message of Array.isArray(params.messages) ? params.messages : []) card.appendChild(renderMessage(message));
      const reply = el("textarea", { className: "reply", rows: 3, placeholder: "the reply, as the model" });
      const model = el("input", { type: "text", className: "model", value: "mcp-ref-inspector" });
      card.appendChild(el("label", null, "Reply ", reply));
      card.appendChild(el("label", null, "Model ", model));
      card.appendChild(el("div", { className: "actions" },
        el("button", { type: "button", className: "approve", on: { click: () => answer({ action: "accept", content: null, result: { role: "assistant", content: { type: "text", text: reply.value }, model: model.value || "mcp-ref-inspector", stopReason: "endTurn" } }) } }, "Approve"),
        el("button", { type: "button", className: "decline", on: { click: () => answer({ action: "decline", content: null, result: null }) } }, "Decline")));
    } else if (ask.mode === "url") {
      card.appendChild(el("h3", null, "Elicitation (URL): the server asks you to visit a page"));
      card.appendChild(el("p", { className: "ask-message" }, asText(params.message)));
      const url = asText(params.url);
      card.appendChild(el("p", null, "URL: ", el("code", { className: "url" }, url)));
      // 2025-11-25 client/elicitation §Safe URL Handling: clients "MUST handle URLs carefully".
      // The client refuses a URL that is not http(s) first (-32602); this guard is the page's own.
      const safe = /^https?:\/\//i.test(url);
      const open = el("button", { type: "button", className: "open", disabled: !safe, on: { click: () => { window.open(url, "_blank", "noopener,noreferrer"); } } }, safe ? "Open" : "Not an http(s) URL: not opened");
      card.appendChild(el("div", { className: "actions" }, open,
        el("button", { type: "button", className: "accept", on: { click: () => answer({ action: "accept", content: null, result: null }) } }, "Accept"),
        el("button", { type: "button", className: "decline", on: { click: () => answer({ action: "decline", content: null, result: null }) } }, "Decline"),
        el("button", { type: "button", className: "cancel", on: { click: () => answer({ action: "cancel", content: null, result: null }) } }, "Cancel")));
    } else {
      card.appendChild(el("h3", null, "Elicitation: the server asks you (elicitation/create)"));
      card.appendChild(el("p", { className: "ask-message" }, asText(params.message)));
      const form = el("form", { noValidate: true });
      const fields = objectFields(isObject(params.requestedSchema) ? params.requestedSchema : {}, ["ask", ask.ask], form);
      card.appendChild(form);
      const accept = () => {
        let content;
        try { content = fields.get(); } catch (e) { showError(errorBox, e); return; }
        answer({ action: "accept", content, result: null });
      };
      form.addEventListener("submit", (event) => { event.preventDefault(); accept(); });
      card.appendChild(el("div", { className: "actions" },
        el("button", { type: "button", className: "accept", on: { click: accept } }, "Accept"),
        el("button", { type: "button", className: "decline", on: { click: () => answer({ action: "decline", content: null, result: null }) } }, "Decline"),
        el("button", { type: "button", className: "cancel", on: { click: () => answer({ action: "cancel", content: null, result: null }) } }, "Cancel")));
    }
    card.appendChild(errorBox);
    card.appendChild(status);
    asks.set(ask.ask, card);
    $("asks").appendChild(card);
    updateAskCount();
  }

  /** The stream (re)opened: the asks waiting now; a card for any other ended while it was lost. */
  function onAsksWaiting(waiting) {
    if (!isObject(waiting) || !Array.isArray(waiting.asks)) return;
    for (const id of [...asks.keys()]) {
      if (!waiting.asks.includes(id)) onAskDone({ ask: id });
    }
  }

  function onAskDone(done) {
    if (!isObject(done)) return;
    const card = asks.get(done.ask);
    if (!card) return;
    asks.delete(done.ask);
    card.remove();
    updateAskCount();
  }

  // ---------------------------------------------------------------- roots

  let rootsEdited = false;

  function rootRow(root) {
    const uri = el("input", { type: "text", className: "uri", placeholder: "file:///path", value: asText(root && root.uri) });
    const name = el("input", { type: "text", className: "root-name", placeholder: "name (optional)", value: asText(root && root.name) });
    const row = el("div", { className: "root-row" }, uri, name);
    row.appendChild(el("button", { type: "button", className: "remove", on: { click: () => { rootsEdited = true; row.remove(); } } }, "Remove"));
    uri.addEventListener("input", () => { rootsEdited = true; });
    name.addEventListener("input", () => { rootsEdited = true; });
    return row;
  }

  function renderRoots(roots) {
    const box = clear($("roots"));
    for (const root of roots) if (isObject(root)) box.appendChild(rootRow(root));
  }

  $("root-add").addEventListener("click", () => { rootsEdited = true; $("roots").appendChild(rootRow(null)); });
  $("roots-save").addEventListener("click", async () => {
    const roots = [];
    for (const row of $("roots").children) {
      const uri = row.querySelector(".uri").value.trim();
      const name = row.querySelector(".root-name").value.trim();
      if (uri) roots.push(name ? { uri, name } : { uri });
    }
    try {
      await api("roots", { roots });
      rootsEdited = false;
      $("roots-saved").textContent = `saved ${roots.length} root${roots.length === 1 ? "" : "s"}`;
    } catch (e) {
      $("roots-saved").textContent = errorText(e);
    }
  });

  // ---------------------------------------------------------------- log

  const LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"];
  const logEntries = [];
  const MAX_LOG = 2000;

  $("log-level").addEventListener("change", async () => {
    const level = $("log-level").value;
    if (!level) return;
    try { await api("log-level", { level }); } catch (e) { window.alert(errorText(e)); }
  });

  function logVisible(entry) {
    const from = LEVELS.indexOf($("log-filter-level").value);
    const text = $("log-filter-text").value.toLowerCase();
    return LEVELS.indexOf(entry.level) >= from && (!text || entry.text.toLowerCase().includes(text));
  }

  function logItem(entry) {
    return el("li", { dataset: { level: entry.level } }, el("span", { className: `level level-${entry.level}` }, entry.level),
      entry.logger ? `[${entry.logger}] ` : "", entry.text);
  }

  function onLog(log) {
    if (!isObject(log)) return;
    const level = LEVELS.includes(log.level) ? log.level : "info";
    const entry = { level, logger: asText(log.logger), text: typeof log.data === "string" ? log.data : pretty(log.data) };
    logEntries.push(entry);
    if (logEntries.length > MAX_LOG) logEntries.shift();
    const pane = $("log-pane");
    if (logVisible(entry)) pane.appendChild(logItem(entry));
    while (pane.children.length > MAX_LOG) pane.firstChild.remove();
  }

  function refilterLog() {
    const pane = clear($("log-pane"));
    for (const entry of logEntries) if (logVisible(entry)) pane.appendChild(logItem(entry));
  }
  $("log-filter-level").addEventListener("change", refilterLog);
  $("log-filter-text").addEventListener("input", refilterLog);

  // ---------------------------------------------------------------- tasks

  function taskRow(task) {
    const id = asText(task.taskId);
    const li = el("li", { dataset: { kind: "task", name: id } }, el("code", null, id), el("span", { className: "what task-status" }, asText(task.status), task.statusMessage ? ` — ${asText(task.statusMessage)}` : ""));
    const act = (action) => async () => {
      try {
        const answer = await api("task", { action, taskId: id });
        showError($("task-error"), null);
        $("task-result").textContent = pretty(answer.result);
        show($("task-result"), true);
        if (action !== "result" && isObject(answer.result) && answer.result.status) li.querySelector(".task-status").textContent = asText(answer.result.status);
      } catch (e) {
        showError($("task-error"), e);
      }
    };
    li.appendChild(el("button", { type: "button", className: "task-get", on: { click: act("get") } }, "Status"));
    li.appendChild(el("button", { type: "button", className: "task-result", on: { click: act("result") } }, "Result"));
    li.appendChild(el("button", { type: "button", className: "task-cancel", on: { click: act("cancel") } }, "Cancel"));
    return li;
  }

  // ---------------------------------------------------------------- the conversation

  // The Conversation's own bounds, in records and bytes (the state says them): past either the
  // oldest go.  Records of a few MiB each would otherwise fill the tab's memory long before 50,000.
  let maxRecords = 50000;
  let maxBytes = 256 * 1024 * 1024;
  const ROW = 24; // px, as --row in the stylesheet
  const MARGIN = 20; // rows rendered above and below the view

  /** What a record weighs, as the Conversation weighs it (its ``_weight``): a message its size;
   *  another record its body, data, line or text, URL, event id and name, and headers. */
  function weight(record) {
    if (record.kind === "message") return (Number(record.size) || 0) + 256;
    let total = 256 + asText(record.body || record.data || record.line || record.text || "").length;
    for (const field of ["url", "event_id", "event"]) total += asText(record[field]).length;
    for (const pair of Array.isArray(record.headers) ? record.headers : []) total += asText(pair[0]).length + asText(pair[1]).length;
    for (const header of Array.isArray(record.mcp_headers) ? record.mcp_headers : []) total += asText(header.raw).length + asText(header.decoded).length;
    return total;
  }

  /**
   * A store of records: the live one, or a replayed file's.  HTTP exchanges are numbered by their
   * transport, from 1 again after a reconnect: an exchange is known by its connection (a request
   * numbered no higher than the one before starts a new connection) and its number.  A message
   * names only the number: it belongs to the request of that number nearest to it in the record
   * (a message sent is recorded just before its request, one received after it), looked up each
   * time, so a message recorded before its request finds it once it comes.
   */
  class Store {
    constructor() {
      this.records = [];
      this.bySeq = new Map();
      this.byExchange = new Map(); // "connection:exchange" -> its http and sse records
      this.exchangeKey = new Map(); // seq of an http or sse record -> "connection:exchange"
      this.requests = new Map(); // exchange number -> [{seq, key}] of its requests, oldest first
      this.carriedBy = new Map(); // seq of a message sent -> the key of the request that carried it
      this.connection = 0;
      this.lastRequest = 0; // the last request's exchange number on this connection
      this.stderr = [];
      this.lastSeq = 0;
      this.dropped = 0;
      this.bytes = 0; // what the records weigh (weight())
    }

    add(record) {
      if (!isObject(record) || typeof record.seq !== "number" || this.bySeq.has(record.seq)) return false;
      this.records.push(record);
      this.bytes += weight(record);
      this.bySeq.set(record.seq, record);
      this.lastSeq = Math.max(this.lastSeq, record.seq);
      const exchange = record.exchange;
      if (typeof exchange === "number" && (record.kind === "http" || record.kind === "sse")) {
        if (record.kind === "http" && record.phase === "request") {
          if (exchange <= this.lastRequest) this.connection += 1;
          this.lastRequest = exchange;
        }
        const key = `${this.connection}:${exchange}`;
        if (record.kind === "http" && record.phase === "request") {
          if (!this.requests.has(exchange)) this.requests.set(exchange, []);
          this.requests.get(exchange).push({ seq: record.seq, key });
          for (const seq of Array.isArray(record.messages) ? record.messages : []) this.carriedBy.set(seq, key);
        }
        this.exchangeKey.set(record.seq, key);
        if (!this.byExchange.has(key)) this.byExchange.set(key, []);
        this.byExchange.get(key).push(record);
      }
      if (record.kind === "stderr") this.stderr.push(record);
      return true;
    }

    /** Drops the oldest past maxRecords or maxBytes (the newest stays); true when some went (the
     *  view is then rebuilt). */
    trim() {
      let excess = 0;
      while (excess < this.records.length - 1 && (this.records.length - excess > maxRecords || this.bytes > maxBytes)) {
        this.bytes -= weight(this.records[excess]);
        excess += 1;
      }
      if (excess === 0) return false;
      const gone = this.records.splice(0, excess);
      for (const record of gone) {
        this.bySeq.delete(record.seq);
        if (record.kind === "stderr") this.stderr.shift();
        const key = this.exchangeKey.get(record.seq);
        if (key === undefined) continue;
        this.exchangeKey.delete(record.seq);
        const list = this.byExchange.get(key);
        if (list) { list.shift(); if (!list.length) this.byExchange.delete(key); }
        for (const seq of record.phase === "request" && Array.isArray(record.messages) ? record.messages : []) this.carriedBy.delete(seq);
        const requests = record.phase === "request" ? this.requests.get(record.exchange) : null;
        if (requests) { requests.shift(); if (!requests.length) this.requests.delete(record.exchange); }
      }
      this.dropped += excess;
      return true;
    }

    /**
     * The key of the exchange that carried ``record`` (undefined: none known): for a message, the
     * request that lists it (``messages``), or the response or event that held it (``carrier``),
     * else the nearest request of its exchange's number (a file from before those fields).
     */
    keyOf(record) {
      if (record.kind !== "message") return this.exchangeKey.get(record.seq);
      const carried = this.carriedBy.get(record.seq);
      if (carried !== undefined) return carried;
      const carrier = typeof record.carrier === "number" ? this.exchangeKey.get(record.carrier) : undefined;
      if (carrier !== undefined) return carrier;
      const requests = typeof record.exchange === "number" ? this.requests.get(record.exchange) : null;
      if (!requests) return undefined;
      let low = 0;
      let high = requests.length - 1;
      while (low < high) { // the first request after the message (or the last)
        const middle = (low + high) >> 1;
        if (requests[middle].seq < record.seq) low = middle + 1; else high = middle;
      }
      const after = requests[low];
      const before = low > 0 ? requests[low - 1] : null;
      if (!before) return after.key;
      return Math.abs(after.seq - record.seq) < Math.abs(record.seq - before.seq) ? after.key : before.key;
    }

    /** The HTTP and SSE records of the exchange that carried ``record`` (empty: none known). */
    exchangeOf(record) {
      const key = this.keyOf(record);
      return (key !== undefined && this.byExchange.get(key)) || [];
    }

    /** The response record of the exchange that carried ``record``, if seen. */
    response(record) {
      return this.exchangeOf(record).find((r) => r.kind === "http" && r.phase === "response");
    }
  }

  const live = new Store();
  let store = live;
  let replay = null; // {name, header} while a file is shown
  let visible = []; // indexes into store.records that pass the filters
  let selectedSeq = null;
  const pending = [];
  let frameAsked = false;
  let stickToBottom = true;
  let serverDropped = 0;
  const rowNodes = new Map(); // seq -> the row element in the DOM

  const diagram = $("diagram");
  const spacer = $("diagram-spacer");

  function kindFilter(record) {
    const kind = $("filter-kind").value;
    if (kind === "all") return true;
    if (kind === "default") return record.kind === "message" || record.kind === "note" || record.kind === "stderr";
    if (kind === "http") return record.kind === "http" || record.kind === "sse";
    return record.kind === kind;
  }

  function passes(record) {
    if (!kindFilter(record)) return false;
    const text = $("filter-method").value.trim().toLowerCase();
    if (!text) return true;
    const haystack = `${asText(record.method)} ${asText(record.label)} ${asText(record.text)} ${asText(record.line)} ${asText(record.url)}`.toLowerCase();
    return haystack.includes(text);
  }

  function refilter() {
    visible = [];
    const records = store.records;
    for (let i = 0; i < records.length; i++) if (passes(records[i])) visible.push(i);
    for (const node of rowNodes.values()) node.remove();
    rowNodes.clear();
    renderRows(true);
  }
  $("filter-kind").addEventListener("change", () => { refilter(); updateCounts(); });
  $("filter-method").addEventListener("input", () => { refilter(); updateCounts(); });

  /** Records from the event stream: queued, drawn once per animation frame. */
  function receive(record) {
    pending.push(record);
    if (!frameAsked) {
      frameAsked = true;
      requestAnimationFrame(flush);
      setTimeout(flush, 250); // a hidden tab gets no frames: draw anyway, less often
    }
  }

  function flush() {
    if (!pending.length) { frameAsked = false; return; }
    frameAsked = false;
    const batch = pending.splice(0);
    let added = false;
    for (const record of batch) {
      if (!live.add(record)) continue;
      added = true;
      if (store === live && passes(record)) visible.push(live.records.length - 1);
    }
    if (live.trim() && store === live) { refilter(); updateCounts(); return; }
    if (added && store === live) renderRows(false);
    if (added && store === live && selectedSeq !== null) refreshDetailsTransport();
    updateCounts();
  }

  function updateCounts() {
    const dropped = store === live ? live.dropped + serverDropped : store.dropped;
    $("dropped").textContent = `${dropped} earlier record${dropped === 1 ? "" : "s"} dropped`;
    show($("dropped"), dropped > 0);
    $("row-count").textContent = `${visible.length} of ${store.records.length} records`;
  }

  diagram.addEventListener("scroll", () => {
    stickToBottom = diagram.scrollTop + diagram.clientHeight >= diagram.scrollHeight - ROW;
    if (!scrollFrame) { scrollFrame = true; requestAnimationFrame(() => { scrollFrame = false; renderRows(false); }); }
  });
  let scrollFrame = false;

  /** Only the rows in view, plus MARGIN on each side, exist in the DOM. */
  function renderRows(forceContent) {
    spacer.style.height = `${visible.length * ROW}px`;
    if (stickToBottom) diagram.scrollTop = diagram.scrollHeight;
    const first = Math.max(0, Math.floor(diagram.scrollTop / ROW) - MARGIN);
    const last = Math.min(visible.length, Math.ceil((diagram.scrollTop + diagram.clientHeight) / ROW) + MARGIN);
    const wanted = new Set();
    for (let i = first; i < last; i++) wanted.add(store.records[visible[i]].seq);
    for (const [seq, node] of rowNodes) {
      if (!wanted.has(seq)) { node.remove(); rowNodes.delete(seq); }
    }
    for (let i = first; i < last; i++) {
      const record = store.records[visible[i]];
      let node = rowNodes.get(record.seq);
      if (!node) {
        node = rowFor(record);
        rowNodes.set(record.seq, node);
        spacer.appendChild(node);
      } else if (forceContent || record.kind === "message") {
        updateChip(node, record);
      }
      node.style.top = `${i * ROW}px`;
      node.classList.toggle("selected", record.seq === selectedSeq);
    }
  }

  function rowFor(record) {
    const node = el("div", { className: `row ${record.kind}`, dataset: { seq: String(record.seq), kind: asText(record.kind) } });
    const marks = el("span", { className: "marks" });
    let text;
    if (record.kind === "message") {
      const type = asText(record.type);
      node.classList.add(record.direction === "receive" ? "receive" : "send", record.direction === "receive" ? "from-server" : "from-client");
      node.classList.add(`t-${type.replace(/[^a-z]/g, "")}`);
      node.dataset.type = type;
      node.dataset.method = asText(record.method);
      text = asText(record.label) || `${asText(record.method)} ${asText(record.id)}`;
      if (record.valid === true) marks.appendChild(el("span", { className: "valid-mark", title: `valid against ${asText(record.schema)}` }, "✓"));
      else if (record.valid === false) marks.appendChild(el("span", { className: "invalid-mark", title: `invalid against ${asText(record.schema)}` }, "✗"));
    } else if (record.kind === "http") {
      text = record.phase === "request" ? `HTTP #${asText(record.exchange)} ${asText(record.method)} ${asText(record.url)}` : `HTTP #${asText(record.exchange)} ${asText(record.status)} ${asText(record.reason)}${record.sse ? " (event stream)" : ""}`;
      node.classList.add(record.phase === "request" ? "send" : "receive");
    } else if (record.kind === "sse") {
      text = `SSE #${asText(record.exchange)} ${record.event_id !== null && record.event_id !== undefined ? `id ${asText(record.event_id)} ` : ""}${asText(record.event)}`;
      node.classList.add("receive");
    } else if (record.kind === "stderr") {
      text = `stderr: ${asText(record.line)}`;
    } else if (record.kind === "note") {
      text = asText(record.text);
    } else {
      text = `${asText(record.kind)}`;
    }
    const lane = el("span", { className: "lane" });
    if (record.kind === "message" || record.kind === "http" || record.kind === "sse") lane.appendChild(el("span", { className: "arrow" }));
    lane.appendChild(el("span", { className: "label", title: text }, el("span", null, text)));
    node.appendChild(el("span", { className: "seq" }, String(record.seq)));
    node.appendChild(lane);
    node.appendChild(marks);
    updateChip(node, record);
    return node;
  }

  function updateChip(node, record) {
    if (record.kind !== "message") return;
    const response = store.response(record);
    const marks = node.querySelector(".marks");
    let chip = marks.querySelector(".chip");
    if (!response) { if (chip) chip.remove(); return; }
    if (!chip) { chip = el("span", { className: "chip" }); marks.appendChild(chip); }
    chip.textContent = asText(response.status);
    chip.title = `HTTP exchange #${asText(record.exchange)}: ${asText(response.status)} ${asText(response.reason)}`;
    chip.classList.toggle("bad", Number(response.status) >= 400);
  }

  diagram.addEventListener("click", (event) => {
    const row = event.target.closest(".row");
    if (row) openRecord(Number(row.dataset.seq));
  });

  diagram.addEventListener("keydown", (event) => {
    if (event.key !== "ArrowDown" && event.key !== "ArrowUp") return;
    event.preventDefault();
    const at = visible.findIndex((i) => store.records[i].seq === selectedSeq);
    const next = Math.max(0, Math.min(visible.length - 1, at + (event.key === "ArrowDown" ? 1 : -1)));
    if (visible.length) openRecord(store.records[visible[next]].seq, true);
  });

  /** Opens a record's details; with `reveal`, scrolls its row into view first. */
  function openRecord(seq, reveal) {
    const record = store.bySeq.get(seq);
    if (!record) return;
    selectedSeq = seq;
    const wasOpen = !$("details").hidden;
    renderDetails(record); // first: opening the details pane shrinks the diagram
    if (reveal || !wasOpen) {
      const position = visible.findIndex((i) => store.records[i].seq === seq);
      if (position >= 0) {
        const top = position * ROW;
        if (top < diagram.scrollTop || top + ROW > diagram.scrollTop + diagram.clientHeight) {
          diagram.scrollTop = Math.max(0, top - diagram.clientHeight / 2);
          stickToBottom = false;
        }
      }
    }
    renderRows(false);
  }

  function renderDetails(record) {
    show($("details"), true);
    $("details").dataset.seq = String(record.seq);
    const when = typeof record.time === "number" ? new Date(record.time * 1000).toISOString().replace("T", " ").replace("Z", "") : "";
    const valid = $("details-valid");
    const spec = $("details-spec");
    const errors = clear($("details-errors"));
    valid.className = "mark";
    valid.textContent = "";
    show(spec, false);
    spec.removeAttribute("href");
    if (record.kind === "message") {
      $("details-title").textContent = asText(record.label) || asText(record.method);
      $("details-meta").textContent = [
        `#${record.seq}`, when, record.direction === "receive" ? "server → client" : "client → server", asText(record.type),
        record.method ? `method ${asText(record.method)}` : "", record.id !== undefined && record.id !== null ? `id ${asText(record.id)}` : "",
        typeof record.size === "number" ? `${record.size} bytes` : "", record.exchange !== null && record.exchange !== undefined ? `HTTP exchange #${asText(record.exchange)}` : "",
      ].filter(Boolean).join(" · ");
      if (record.valid === true) { valid.classList.add("valid"); valid.textContent = `✓ valid (schema ${asText(record.schema)})`; }
      else if (record.valid === false) { valid.classList.add("invalid"); valid.textContent = `✗ invalid (schema ${asText(record.schema)})`; }
      else valid.textContent = "no schema applies";
      for (const error of Array.isArray(record.errors) ? record.errors : []) errors.appendChild(el("li", null, asText(error)));
      const link = isObject(record.spec) ? record.spec : null;
      // only the specification's own pages (a replayed file could say anything)
      if (link && typeof link.url === "string" && /^https:\/\/modelcontextprotocol\.io\/[^\s]*$/.test(link.url)) {
        spec.href = link.url;
        spec.textContent = `spec: ${asText(link.title) || link.url}`;
        show(spec, true);
      }
      $("details-json").textContent = pretty(record.message);
    } else {
      $("details-title").textContent = `${asText(record.kind)} record`;
      $("details-meta").textContent = [`#${record.seq}`, when].filter(Boolean).join(" · ");
      const copy = { ...record };
      $("details-json").textContent = pretty(copy);
    }
    renderTransport(record);
  }

  function refreshDetailsTransport() {
    const record = store.bySeq.get(selectedSeq);
    if (record) renderTransport(record);
  }

  /** Under a message: its HTTP exchange (request, response, SSE events), or the server's stderr. */
  function renderTransport(record) {
    const box = clear($("details-transport"));
    box.className = "transport";
    const exchange = record.exchange;
    const list = record.kind === "stderr" || record.kind === "note" ? [] : store.exchangeOf(record);
    if (list.length || (exchange !== null && exchange !== undefined && record.kind !== "stderr" && record.kind !== "note")) {
      box.appendChild(el("h4", null, `HTTP exchange #${asText(list.length ? list[0].exchange : exchange)}`));
      if (!list.length) box.appendChild(el("p", { className: "muted" }, "(no HTTP record of this exchange)"));
      for (const item of list) {
        if (item.kind === "http" && item.phase === "request") {
          box.appendChild(el("div", { className: "http-request" }, el("h4", null, "Request"), el("pre", { className: "request-line" }, `${asText(item.method)} ${asText(item.url)}`), headersTable(item), bodyOf(item)));
        } else if (item.kind === "http") {
          box.appendChild(el("div", { className: "http-response" }, el("h4", null, "Response"), el("pre", { className: "status-line" }, `${asText(item.status)} ${asText(item.reason)}`), headersTable(item),
            item.sse ? el("p", { className: "muted" }, "an event stream: its events follow") : bodyOf(item)));
        } else if (item.kind === "sse") {
          box.appendChild(el("div", { className: "sse-event" },
            el("div", null, el("strong", null, "SSE event"), ` ${asText(item.event)}`, item.event_id !== null && item.event_id !== undefined ? `  id: ${asText(item.event_id)}` : "  (no id)", item.retry !== null && item.retry !== undefined ? `  retry: ${asText(item.retry)}` : ""),
            el("pre", null, asText(item.data))));
        }
      }
      return;
    }
    if (record.kind === "message" || record.kind === "stderr") {
      const before = store.stderr.filter((line) => line.seq <= record.seq).slice(-200);
      box.appendChild(el("h4", null, `Server stderr (${before.length ? `the last ${before.length} lines up to here` : "nothing yet"})`));
      box.appendChild(el("pre", { className: "console" }, before.map((line) => `${asText(line.line)}\n`).join("")));
    }
  }

  function headersTable(item) {
    const table = el("table", { className: "headers" });
    const mcp = new Map();
    for (const header of Array.isArray(item.mcp_headers) ? item.mcp_headers : []) if (isObject(header)) mcp.set(asText(header.name).toLowerCase(), header);
    for (const pair of Array.isArray(item.headers) ? item.headers : []) {
      if (!Array.isArray(pair)) continue;
      const name = asText(pair[0]);
      const decoded = mcp.get(name.toLowerCase());
      const row = el("tr", { className: decoded ? "mcp" : "" }, el("td", null, name), el("td", null, asText(pair[1]),
        decoded && decoded.decoded !== undefined && decoded.decoded !== null && asText(decoded.decoded) !== asText(pair[1]) ? el("div", { className: "decoded" }, `decoded: ${asText(decoded.decoded)}`) : null));
      table.appendChild(row);
    }
    return table;
  }

  function bodyOf(item) {
    if (item.body === null || item.body === undefined || item.body === "") return el("p", { className: "muted" }, "(no body)");
    let text = asText(item.body);
    try { text = pretty(JSON.parse(text)); } catch (e) { /* not JSON: as it is */ }
    return el("div", null, el("pre", { className: "json body" }, text), item.truncated ? el("p", { className: "muted" }, "(cut at 64 KiB)") : null);
  }

  // ---------------------------------------------------------------- export, replay, clear

  $("replay-file").addEventListener("change", () => {
    const file = $("replay-file").files[0];
    if (!file) return;
    const reader = new FileReader();
    reader.onload = () => startReplay(file.name, String(reader.result));
    reader.onerror = () => window.alert(`could not read ${file.name}`);
    reader.readAsText(file);
  });

  /** Shows a file exported by this page (JSON lines, a header first) instead of the live records. */
  function startReplay(name, text) {
    const replayed = new Store();
    let header = null;
    let bad = 0;
    for (const line of text.split("\n")) {
      if (!line.trim()) continue;
      let record;
      try { record = JSON.parse(line); } catch (e) { bad += 1; continue; }
      if (isObject(record) && record.kind === "header") { header = record; continue; }
      if (!replayed.add(record)) bad += 1;
    }
    replayed.trim();
    if (header && typeof header.dropped === "number" && header.dropped > 0) replayed.dropped += header.dropped;
    if (!header || header.format !== "mcp-ref-conversation") {
      window.alert(`${name}: not an exported conversation (its first line is not the mcp-ref-conversation header)`);
      $("replay-file").value = "";
      return;
    }
    replay = { name, header, bad };
    store = replayed;
    $("replay-name").textContent = `${name} (${asText(header.target)}, ${asText(header.revision)}${bad ? `, ${bad} unreadable lines skipped` : ""})`;
    show($("replay-banner"), true);
    $("clear").disabled = true; // it would clear the live conversation, out of sight
    document.body.classList.add("replaying");
    selectedSeq = null;
    show($("details"), false);
    stickToBottom = false;
    diagram.scrollTop = 0;
    refilter();
    updateCounts();
    renderState(state);
  }

  $("replay-leave").addEventListener("click", () => {
    replay = null;
    store = live;
    $("replay-file").value = "";
    show($("replay-banner"), false);
    $("clear").disabled = false;
    document.body.classList.remove("replaying");
    selectedSeq = null;
    show($("details"), false);
    stickToBottom = true;
    refilter();
    updateCounts();
    renderState(state);
  });

  $("clear").addEventListener("click", async () => {
    try {
      await api("clear", {});
    } catch (e) {
      window.alert(errorText(e));
      return;
    }
    const fresh = new Store();
    fresh.lastSeq = live.lastSeq;
    Object.assign(live, fresh);
    serverDropped = 0;
    if (store === live) { selectedSeq = null; show($("details"), false); refilter(); updateCounts(); }
  });

  // ---------------------------------------------------------------- the event stream

  let source = null;
  let streamLost = false; // the event stream broke and is reconnecting

  function listen() {
    if (source) source.close();
    source = new EventSource(`events?after=${live.lastSeq}`);
    source.addEventListener("state", (e) => onData(e, renderState));
    source.addEventListener("record", (e) => onData(e, receive));
    source.addEventListener("ask", (e) => onData(e, onAsk));
    source.addEventListener("asks-waiting", (e) => onData(e, onAsksWaiting));
    source.addEventListener("ask-done", (e) => onData(e, onAskDone));
    source.addEventListener("progress", (e) => onData(e, (p) => { const call = isObject(p) && calls.get(p.call); if (call) call.progress(p); }));
    source.addEventListener("updated", (e) => onData(e, (u) => { if (isObject(u)) onResourceUpdated(asText(u.uri)); }));
    source.addEventListener("list-changed", (e) => onData(e, onListChanged));
    source.addEventListener("log", (e) => onData(e, onLog));
    source.addEventListener("open", () => { streamLost = false; renderState(state); });
    source.addEventListener("error", () => {
      // EventSource reconnects by itself (with Last-Event-ID); a closed one is opened again here
      streamLost = true;
      if (!replay) { $("status").dataset.state = "error"; $("status").textContent = "the inspector is not answering: reconnecting…"; }
      if (source.readyState === EventSource.CLOSED) setTimeout(listen, 2000);
    });
  }

  /** The server's tools, resources or prompts changed: listed again from the first page. */
  function onListChanged(changed) {
    if (!isObject(changed) || !["tools", "resources", "prompts"].includes(changed.what)) return;
    lists[changed.what].relist();
    if (changed.what === "resources") lists.templates.relist();
    const line = $(`${changed.what}-changed`);
    line.textContent = `Listed again at ${new Date().toLocaleTimeString()}: the server said its ${changed.what} changed.`;
    show(line, true);
  }

  function onData(event, handle) {
    let data;
    try { data = JSON.parse(event.data); } catch (e) { return; }
    handle(data);
  }

  async function start() {
    try {
      const page = await getJson("api/records?after=0&limit=1");
      serverDropped = Number(page.dropped) || 0;
    } catch (e) { /* the event stream says the rest */ }
    listen();
  }

  // for tests and the curious: the page's own state, read-only
  window.inspector = Object.freeze({
    rowsInDom: () => spacer.querySelectorAll(".row").length,
    records: () => store.records.length,
    replaying: () => replay !== null,
    find: (predicate) => store.records.filter((r) => predicate(r)).map((r) => r.seq),
    reveal: (seq) => {
      if (!visible.some((i) => store.records[i].seq === seq)) { $("filter-kind").value = "all"; $("filter-method").value = ""; refilter(); }
      const position = visible.findIndex((i) => store.records[i].seq === seq);
      if (position >= 0) { stickToBottom = false; diagram.scrollTop = Math.max(0, position * ROW - diagram.clientHeight / 2); renderRows(false); }
    },
    open: (seq) => openRecord(seq, true),
  });

  updateAskCount();
  start();
})();
