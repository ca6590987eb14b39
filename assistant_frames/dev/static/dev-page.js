/*
 * assistant-frames dev page: shows what Python (assistant_frames.dev.DevPage) pushes.
 *
 * Over one WebSocket ("socket", beside this page; the token from this URL's fragment is
 * sent as ?access_token=) Python sends
 *   hello {title, theme}   theme {theme}   ("light" or "dark": the page's and its views')
 *   state {members, instructions, tools, waiting, conflicts, exports}   (the whole state)
 *   started {call, tool, member, arguments}   progress {call, progress, total, message}
 *   log {call, level, message, data}   result {call, result, ms}
 *   error {call, error: {type, code, message, member, tool}, ms}   cancelled {call, ms}
 *   notice {level, text}
 * (a call this page did not make is the program's, the model's: it is shown under its
 * tool when its "started" comes) and, for a call of a tool with a UI (an MCP Apps view, shown by an AppPage in Python),
 *   view {call, id, title, state, error, fallback, displayMode, displayModes, src?,
 *         socket?, allow?, border?}
 *   view-log {call, id, direction: "in"|"out", message}   view-size {call, id, width, height}
 *   view-message {call, id, text}   view-link {call, id, url}
 * and this page sends   call {call, tool, arguments}   cancel {call}   theme {theme}
 *   view-mode {id, mode}   view-close {id}.
 * A view's iframe is on another origin (src), sandboxed, bridged to its own WebSocket
 * ("view/<id>" beside this page) by the shipped parent relay in app mode (view-box.js,
 * shared with the app page).
 *
 * A form per tool is generated from its JSON Schema (strings, numbers, integers,
 * booleans, enums, nested objects, arrays of either; defaults, required fields and
 * validation messages before sending), with a raw-JSON mode beside it. What changed
 * since the last state is highlighted. window.devPage.snapshot() reports what is
 * shown, for tests. Plain ES2020, no dependencies.
 */
(function () {
  "use strict";

  var MAX_ACTIVITY = 200;
  var MAX_LOGS = 500;
  var token = new URLSearchParams(location.hash.slice(1)).get("token") || "";
  var $ = function (id) {
    return document.getElementById(id);
  };
  var socket = null;
  var attempts = 0;
  var state = null; // the last state Python sent
  var cards = {}; // tool name -> {item, key, schemaKey, form}
  var calls = {}; // call id -> {item, tool, ...}
  var callCounter = 0;
  var idCounter = 0;
  var exportKeys = {};
  var views = {}; // view id -> {call, box, iframe, relay, traffic, last, loads}
  var MAX_TRAFFIC = 500;
  var ViewBox = window.AssistantFramesViewBox;

  // -- small helpers -----------------------------------------------------------------

  function el(tag, className, text) {
    var node = document.createElement(tag);
    if (className) node.className = className;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function nextId(prefix) {
    idCounter += 1;
    return prefix + "-" + idCounter;
  }

  function json(value) {
    return JSON.stringify(value, null, 2);
  }

  function flash(node) {
    node.classList.remove("changed");
    void node.offsetWidth; // restart the animation
    node.classList.add("changed");
    setTimeout(function () {
      node.classList.remove("changed");
    }, 2600);
  }

  function activity(text) {
    var item = el("li");
    var time = el("time", null, new Date().toLocaleTimeString());
    item.appendChild(time);
    item.appendChild(document.createTextNode(text));
    var list = $("activity");
    list.prepend(item);
    while (list.children.length > MAX_ACTIVITY) list.lastChild.remove();
  }

  function notice(level, text) {
    var item = el("li", level, text);
    $("notices").appendChild(item);
    setTimeout(function () {
      item.remove();
    }, 8000);
  }

  function setStatus(text) {
    $("status").textContent = text;
    document.body.setAttribute("data-status", text.split(" ")[0]);
  }

  // -- the WebSocket -------------------------------------------------------------------

  function socketUrl() {
    var url = new URL("socket", location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.hash = "";
    url.search = "?access_token=" + encodeURIComponent(token);
    return url.href;
  }

  function connect() {
    if (!token) {
      setStatus("no token: open the URL the command printed (with #token=...)");
      return;
    }
    setStatus("connecting");
    socket = new WebSocket(socketUrl());
    socket.onopen = function () {
      attempts = 0;
      setStatus("connected");
    };
    socket.onmessage = function (event) {
      var message;
      try {
        message = JSON.parse(event.data);
      } catch (error) {
        return;
      }
      handle(message);
    };
    socket.onclose = function () {
      socket = null;
      Object.keys(calls).forEach(function (id) {
        if (calls[id].running) finish(id, "lost", "the connection to the dev server was lost");
      });
      attempts += 1;
      var delay = Math.min(5000, 250 * Math.pow(2, attempts));
      setStatus("disconnected: reconnecting");
      setTimeout(connect, delay);
    };
  }

  function send(message) {
    if (!socket || socket.readyState !== WebSocket.OPEN) return false;
    socket.send(JSON.stringify(message));
    return true;
  }

  function handle(message) {
    switch (message.type) {
      case "hello":
        $("title").textContent = message.title;
        document.title = message.title;
        applyTheme(message.theme);
        break;
      case "theme":
        applyTheme(message.theme);
        break;
      case "state":
        showState(message);
        break;
      case "started":
      case "progress":
      case "log":
      case "result":
      case "error":
      case "cancelled":
        callEvent(message);
        break;
      case "notice":
        notice(message.level, message.text);
        break;
      case "view":
      case "view-log":
      case "view-size":
      case "view-message":
      case "view-link":
        viewEvent(message);
        break;
      default:
        break;
    }
  }

  // -- state -----------------------------------------------------------------------------

  function showState(next) {
    var first = state === null;
    var previous = state;
    state = next;
    showMembers(next.members, previous ? previous.members : null);
    showInstructions(next, previous, first);
    showTools(next.tools, first);
    showExport(first);
  }

  function showMembers(members, before) {
    var list = $("members");
    var old = {};
    (before || []).forEach(function (member) {
      old[member.name] = member;
    });
    var seen = {};
    members.forEach(function (member) {
      seen[member.name] = true;
      var was = old[member.name];
      if (!before) activity(member.name + ": " + member.state);
      else if (!was) activity(member.name + " joined (" + member.state + ")");
      else if (was.state !== member.state)
        activity(member.name + ": " + was.state + " \u2192 " + member.state + (member.error ? " (" + member.error + ")" : ""));
      else if (member.error && was.error !== member.error) // the reason came after the state
        activity(member.name + ": " + member.state + " (" + member.error + ")");
      else if (was.tools.length !== member.tools.length)
        activity(member.name + ": " + member.tools.length + " tool" + (member.tools.length === 1 ? "" : "s"));
    });
    Object.keys(old).forEach(function (name) {
      if (!seen[name]) activity(name + " left");
    });
    var items = {};
    Array.prototype.forEach.call(list.children, function (item) {
      items[item.getAttribute("data-member")] = item;
    });
    members.forEach(function (member, index) {
      var item = items[member.name];
      var key = JSON.stringify(member);
      if (!item) {
        item = el("li", "member");
        item.setAttribute("data-member", member.name);
        if (before) flash(item);
      } else if (item.getAttribute("data-key") !== key) {
        flash(item);
      }
      delete items[member.name];
      if (item.getAttribute("data-key") !== key) {
        item.setAttribute("data-key", key);
        item.setAttribute("data-state", member.state);
        item.textContent = "";
        item.appendChild(el("span", "name", member.name));
        item.appendChild(el("span", "state " + member.state, member.state));
        item.appendChild(el("div", "target", member.target));
        var count = member.tools.length;
        item.appendChild(
          el("div", "muted", count + " tool" + (count === 1 ? "" : "s") + ", " + member.connections + " connection" + (member.connections === 1 ? "" : "s"))
        );
        if (member.error) item.appendChild(el("p", "error", member.error));
      }
      if (list.children[index] !== item) list.insertBefore(item, list.children[index] || null);
    });
    Object.keys(items).forEach(function (name) {
      items[name].remove();
    });
    if (!members.length) {
      list.textContent = "";
      list.appendChild(el("li", "muted", "no members"));
    }
  }

  function showInstructions(next, previous, first) {
    var box = $("instructions");
    var key = JSON.stringify([next.instructions, next.members.map(function (m) { return [m.name, m.instructions]; })]);
    if (box.getAttribute("data-key") === key) return;
    box.setAttribute("data-key", key);
    box.textContent = "";
    var merged = el("details", "merged");
    merged.open = true;
    merged.appendChild(el("summary", null, "Merged"));
    merged.appendChild(el("pre", "text", next.instructions || "(none)"));
    merged.id = "merged-instructions";
    box.appendChild(merged);
    next.members.forEach(function (member) {
      var part = el("details", "member-instructions");
      part.setAttribute("data-member", member.name);
      part.appendChild(el("summary", null, member.name));
      part.appendChild(el("pre", "text", member.instructions || "(none)"));
      box.appendChild(part);
    });
    if (!first && previous) flash(box);
  }

  function showTools(tools, first) {
    var list = $("tools");
    $("tool-count").textContent = "(" + tools.length + ")";
    var keep = {};
    tools.forEach(function (tool, index) {
      keep[tool.name] = true;
      var key = JSON.stringify(tool);
      var card = cards[tool.name];
      if (!card) {
        card = cards[tool.name] = makeCard(tool);
        if (!first) flash(card.item);
      } else if (card.key !== key) {
        updateCard(card, tool);
        flash(card.item);
      }
      card.key = key;
      card.tool = tool;
      if (list.children[index] !== card.item) list.insertBefore(card.item, list.children[index] || null);
    });
    Object.keys(cards).forEach(function (name) {
      if (!keep[name]) {
        cards[name].item.remove();
        delete cards[name];
      }
    });
    applyFilter();
  }

  function applyFilter() {
    var words = $("filter").value.trim().toLowerCase();
    Object.keys(cards).forEach(function (name) {
      var tool = cards[name].tool;
      var text = (tool.name + " " + (tool.owner || "") + " " + tool.description).toLowerCase();
      cards[name].item.hidden = words !== "" && text.indexOf(words) < 0;
    });
  }

  function showExport(first) {
    var format = $("format").value;
    var exported = state && state.exports ? state.exports[format] : null;
    var text = json(exported === undefined ? null : exported);
    var pre = $("export");
    if (pre.textContent !== text) {
      pre.textContent = text;
      if (!first && exportKeys[format] !== undefined && exportKeys[format] !== text) flash(pre);
    }
    exportKeys[format] = text;
  }

  // -- a tool's card ----------------------------------------------------------------------

  function makeCard(tool) {
    var item = el("li", "tool");
    item.setAttribute("data-tool", tool.name);
    var details = el("details");
    var summary = el("summary");
    var body = el("div", "body");
    details.appendChild(summary);
    details.appendChild(body);
    item.appendChild(details);
    var card = { item: item, summary: summary, body: body, key: null, schemaKey: null, tool: tool };
    card.facts = el("div", "facts-box");
    card.formBox = el("div", "form-box");
    card.calls = el("ol", "calls");
    card.calls.setAttribute("aria-label", "Calls of " + tool.name);
    card.calls.setAttribute("aria-live", "polite");
    body.appendChild(card.facts);
    body.appendChild(card.formBox);
    body.appendChild(card.calls);
    updateCard(card, tool);
    return card;
  }

  function updateCard(card, tool) {
    var summary = card.summary;
    summary.textContent = "";
    summary.appendChild(el("span", "tool-name", tool.name));
    summary.appendChild(el("span", "owner", tool.owner ? tool.owner : "this process"));
    var annotations = tool.annotations || {};
    if (annotations.readOnlyHint) summary.appendChild(el("span", "badge", "read-only"));
    if (annotations.destructiveHint) summary.appendChild(el("span", "badge", "destructive"));
    if (tool.uiResource) summary.appendChild(el("span", "badge", "UI"));
    if (tool.visibility.indexOf("model") < 0) summary.appendChild(el("span", "badge", "app only"));
    if (tool.disabled) summary.appendChild(el("span", "badge", "disabled"));
    if (tool.description) summary.appendChild(el("span", "summary-description", firstLine(tool.description)));

    var facts = card.facts;
    facts.textContent = "";
    if (tool.description) facts.appendChild(el("pre", "description", tool.description));
    var dl = el("dl", "facts");
    fact(dl, "member", tool.owner || "this process (no member)");
    if (tool.title) fact(dl, "title", tool.title);
    fact(dl, "visibility", tool.visibility.join(", "));
    if (tool.uiResource) fact(dl, "UI resource", tool.uiResource);
    facts.appendChild(dl);
    facts.appendChild(section("JSON Schema", tool.inputSchema, "schema"));
    if (tool.annotations) facts.appendChild(section("Annotations", tool.annotations, "annotations"));
    if (tool.outputSchema) facts.appendChild(section("Output schema", tool.outputSchema, "output-schema"));
    if (tool.meta) facts.appendChild(section("_meta", tool.meta, "meta"));

    var schemaKey = JSON.stringify(tool.inputSchema);
    if (card.schemaKey !== schemaKey) {
      var previous = card.form ? card.form.currentValue() : undefined;
      card.schemaKey = schemaKey;
      card.formBox.textContent = "";
      card.form = makeForm(card, tool);
      card.formBox.appendChild(card.form.node);
      if (previous !== undefined) card.form.fill(previous);
    }
  }

  function firstLine(text) {
    var line = String(text).split("\n")[0];
    return line.length > 140 ? line.slice(0, 139) + "\u2026" : line;
  }

  function fact(dl, name, value) {
    dl.appendChild(el("dt", null, name));
    dl.appendChild(el("dd", null, value));
  }

  function section(title, value, className) {
    var details = el("details", className);
    details.appendChild(el("summary", null, title));
    details.appendChild(el("pre", null, json(value)));
    return details;
  }

  // -- forms from JSON Schema -------------------------------------------------------------

  // A schema's own type, with `anyOf`/`oneOf` of one type and null (Optional[...]) unwrapped.
  function simplify(schema) {
    schema = schema && typeof schema === "object" ? schema : {};
    var nullable = false;
    var options = schema.anyOf || schema.oneOf;
    if (Array.isArray(options)) {
      var rest = options.filter(function (option) {
        return !(option && option.type === "null");
      });
      if (rest.length === 1 && rest.length < options.length) {
        var merged = Object.assign({}, schema, rest[0]);
        delete merged.anyOf;
        delete merged.oneOf;
        if (merged.default === undefined && schema.default !== undefined) merged.default = schema.default;
        return { schema: merged, nullable: true };
      }
    }
    if (Array.isArray(schema.type)) {
      var types = schema.type.filter(function (type) {
        return type !== "null";
      });
      nullable = types.length < schema.type.length;
      if (types.length === 1) return { schema: Object.assign({}, schema, { type: types[0] }), nullable: nullable };
    }
    return { schema: schema, nullable: nullable };
  }

  function kindOf(schema) {
    if (Array.isArray(schema.enum)) return "enum";
    if (schema.const !== undefined) return "enum";
    if (schema.$ref || schema.anyOf || schema.oneOf || schema.allOf || Array.isArray(schema.type)) return "json";
    var type = schema.type;
    if (type === undefined && schema.properties) type = "object";
    if (type === "object" && schema.properties) return "object";
    if (type === "array" && schema.items && !Array.isArray(schema.items)) return "array";
    if (type === "string" || type === "number" || type === "integer" || type === "boolean") return type;
    return "json";
  }

  function labelText(name, schema) {
    return schema.title && schema.title !== name ? schema.title + " (" + name + ")" : name;
  }

  // A field: {node, read() -> {set, value, errors: [{field, text}]}, write(value), focus()}.
  function makeField(name, rawSchema, required) {
    var simple = simplify(rawSchema);
    var schema = simple.schema;
    var kind = kindOf(schema);
    if (kind === "object") return objectField(name, schema, required);
    if (kind === "array") return arrayField(name, schema, required);
    return leafField(name, schema, required, kind);
  }

  function decorateLabel(label, name, schema, required) {
    label.textContent = labelText(name, schema);
    if (required) {
      var mark = el("span", "required-mark", " *");
      mark.setAttribute("aria-hidden", "true");
      label.appendChild(mark);
    }
  }

  function leafField(name, schema, required, kind) {
    var id = nextId("field");
    var box = el("div", "field");
    box.setAttribute("data-field", name);
    box.setAttribute("data-kind", kind);
    var label = el("label");
    label.htmlFor = id;
    decorateLabel(label, name, schema, required);
    var input;
    var checkbox = kind === "boolean" && (required || schema.default !== undefined);
    if (kind === "enum") {
      input = el("select");
      var values = Array.isArray(schema.enum) ? schema.enum : [schema.const];
      if (!required || schema.default === undefined) input.appendChild(option("", required ? "(choose)" : "(not set)"));
      values.forEach(function (value) {
        input.appendChild(option(JSON.stringify(value), typeof value === "string" ? value : JSON.stringify(value)));
      });
    } else if (kind === "boolean" && !checkbox) {
      input = el("select");
      input.appendChild(option("", "(not set)"));
      input.appendChild(option("true", "true"));
      input.appendChild(option("false", "false"));
    } else if (kind === "json") {
      input = el("textarea");
      input.rows = 3;
      input.spellcheck = false;
      input.placeholder = "JSON";
    } else {
      input = el("input");
      if (checkbox) input.type = "checkbox";
      else if (kind === "number" || kind === "integer") {
        input.type = "number";
        input.step = kind === "integer" ? "1" : "any";
        if (typeof schema.minimum === "number") input.min = String(schema.minimum);
        if (typeof schema.maximum === "number") input.max = String(schema.maximum);
      } else input.type = "text";
    }
    input.id = id;
    input.name = name;
    if (required) input.setAttribute("aria-required", "true");
    var help = schema.description ? el("span", "help", schema.description) : null;
    var error = el("span", "field-error");
    error.id = id + "-error";
    error.setAttribute("aria-live", "polite");
    var described = [error.id];
    if (help) {
      help.id = id + "-help";
      described.unshift(help.id);
    }
    input.setAttribute("aria-describedby", described.join(" "));
    if (checkbox) {
      box.classList.add("checkbox");
      box.appendChild(input);
      box.appendChild(document.createTextNode(" "));
    }
    box.appendChild(label);
    if (!checkbox) box.appendChild(input);
    if (help) box.appendChild(help);
    box.appendChild(error);

    function write(value) {
      if (value === undefined || value === null) {
        if (checkbox) input.checked = false;
        else input.value = "";
        return;
      }
      if (checkbox) input.checked = value === true;
      else if (kind === "enum") input.value = JSON.stringify(value);
      else if (kind === "boolean") input.value = value ? "true" : "false";
      else if (kind === "json") input.value = JSON.stringify(value, null, 2);
      else input.value = String(value);
    }

    function read() {
      var errors = [];
      var fail = function (text) {
        errors.push({ field: name, text: text, input: input });
      };
      var value;
      var set = true;
      if (checkbox) value = input.checked;
      else if (input.value === "") set = false;
      else if (kind === "enum" || kind === "boolean") value = JSON.parse(input.value);
      else if (kind === "json") {
        try {
          value = JSON.parse(input.value);
        } catch (problem) {
          fail(name + ": not valid JSON (" + problem.message + ")");
        }
      } else if (kind === "number" || kind === "integer") {
        if (input.validity && input.validity.badInput) fail(name + ": not a number");
        value = Number(input.value);
        if (!isFinite(value)) fail(name + ": not a number");
        else if (kind === "integer" && Math.floor(value) !== value) fail(name + ": must be a whole number");
        else {
          if (typeof schema.minimum === "number" && value < schema.minimum) fail(name + ": must be at least " + schema.minimum);
          if (typeof schema.maximum === "number" && value > schema.maximum) fail(name + ": must be at most " + schema.maximum);
          if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) fail(name + ": must be more than " + schema.exclusiveMinimum);
          if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) fail(name + ": must be less than " + schema.exclusiveMaximum);
        }
      } else {
        value = input.value;
        if (typeof schema.minLength === "number" && value.length < schema.minLength) fail(name + ": at least " + schema.minLength + " characters");
        if (typeof schema.maxLength === "number" && value.length > schema.maxLength) fail(name + ": at most " + schema.maxLength + " characters");
        if (typeof schema.pattern === "string") {
          try {
            if (!new RegExp(schema.pattern, "u").test(value)) fail(name + ": must match " + schema.pattern);
          } catch (ignored) {
            /* a pattern JavaScript cannot read: the server checks it */
          }
        }
      }
      if (!set && required) fail(name + " is required");
      return { set: set, value: value, errors: errors };
    }

    write(schema.default);
    return {
      node: box,
      read: read,
      write: write,
      showErrors: function (errors) {
        error.textContent = errors.map(function (e) { return e.text; }).join("; ");
        if (errors.length) input.setAttribute("aria-invalid", "true");
        else input.removeAttribute("aria-invalid");
      },
    };
  }

  function option(value, text) {
    var node = el("option", null, text);
    node.value = value;
    return node;
  }

  // The box of an object or array field: its legend, then its description.
  function fieldset(className, name, schema, required) {
    var box = el("fieldset", className);
    box.setAttribute("data-field", name);
    var legend = el("legend");
    decorateLabel(legend, name, schema, required);
    box.appendChild(legend);
    if (schema.description) box.appendChild(el("p", "help", schema.description));
    return box;
  }

  function objectField(name, schema, required) {
    var box = fieldset("object", name, schema, required);
    var children = objectChildren(box, schema);
    if (schema.default !== undefined) children.write(schema.default);
    return {
      node: box,
      read: function () {
        var got = children.read();
        if (!got.touched && !required) return { set: false, value: undefined, errors: [] };
        return { set: true, value: got.value, errors: got.errors };
      },
      write: children.write,
      showErrors: children.showErrors,
    };
  }

  // The fields of an object schema inside `box`: read() -> {value, errors, touched}.
  function objectChildren(box, schema) {
    var needed = Array.isArray(schema.required) ? schema.required : [];
    var fields = [];
    Object.keys(schema.properties || {}).forEach(function (key) {
      var field = makeField(key, schema.properties[key], needed.indexOf(key) >= 0);
      field.key = key;
      fields.push(field);
      box.appendChild(field.node);
    });
    return {
      read: function () {
        var value = {};
        var errors = [];
        var touched = false;
        fields.forEach(function (field) {
          var got = field.read();
          field.showErrors(got.errors.filter(function (e) { return !e.nested; }));
          errors = errors.concat(got.errors.map(function (e) {
            return { field: e.field, text: e.text, input: e.input, nested: true };
          }));
          if (got.set) {
            value[field.key] = got.value;
            touched = true;
          }
        });
        return { value: value, errors: errors, touched: touched };
      },
      write: function (value) {
        var given = value && typeof value === "object" ? value : {};
        fields.forEach(function (field) {
          field.write(given[field.key]);
        });
      },
      showErrors: function () {},
    };
  }

  function arrayField(name, schema, required) {
    var box = fieldset("array", name, schema, required);
    var list = el("ol", "array-items");
    box.appendChild(list);
    var add = el("button", "add-item", "Add item");
    add.type = "button";
    add.setAttribute("aria-label", "Add an item to " + name);
    box.appendChild(add);
    var error = el("span", "field-error");
    error.setAttribute("aria-live", "polite");
    box.appendChild(error);
    var items = [];

    function addItem(value) {
      var index = items.length + 1;
      var field = makeField(name + "[" + index + "]", schema.items, true);
      var row = el("li", "array-item");
      row.appendChild(field.node);
      var remove = el("button", "remove-item", "Remove");
      remove.type = "button";
      remove.setAttribute("aria-label", "Remove item " + index + " of " + name);
      row.appendChild(remove);
      var entry = { field: field, row: row };
      remove.addEventListener("click", function () {
        items.splice(items.indexOf(entry), 1);
        row.remove();
        add.focus();
      });
      items.push(entry);
      list.appendChild(row);
      if (value !== undefined) field.write(value);
      return field;
    }

    add.addEventListener("click", function () {
      var field = addItem(undefined);
      var first = field.node.querySelector("input, select, textarea");
      if (first) first.focus();
    });

    function write(value) {
      items.forEach(function (entry) {
        entry.row.remove();
      });
      items = [];
      if (Array.isArray(value)) value.forEach(addItem);
    }

    write(schema.default);
    return {
      node: box,
      read: function () {
        var errors = [];
        var value = items.map(function (entry) {
          var got = entry.field.read();
          entry.field.showErrors(got.errors.filter(function (e) { return !e.nested; }));
          errors = errors.concat(got.errors.map(function (e) {
            return { field: e.field, text: e.text, input: e.input, nested: true };
          }));
          return got.value;
        });
        var own = [];
        if (typeof schema.minItems === "number" && value.length < schema.minItems) own.push(name + ": at least " + schema.minItems + " item(s)");
        if (typeof schema.maxItems === "number" && value.length > schema.maxItems) own.push(name + ": at most " + schema.maxItems + " item(s)");
        error.textContent = own.join("; ");
        own.forEach(function (text) {
          errors.push({ field: name, text: text, input: add, nested: true });
        });
        if (!items.length && !required) return { set: false, value: undefined, errors: errors };
        return { set: true, value: value, errors: errors };
      },
      write: write,
      showErrors: function () {},
    };
  }

  // The form of one tool: generated fields or raw JSON, and the Call button.
  function makeForm(card, tool) {
    var form = el("form", "call-form");
    form.noValidate = true;
    form.setAttribute("aria-label", "Call " + tool.name);
    var schema = simplify(tool.inputSchema).schema;
    var generated = kindOf(Object.assign({ type: "object" }, schema)) === "object" || !schema.properties;

    var modes = el("fieldset", "mode");
    modes.appendChild(el("legend", null, "Arguments"));
    var group = nextId("mode");
    var formRadio = radio(group, "form", "Form", true);
    var jsonRadio = radio(group, "json", "JSON", false);
    modes.appendChild(formRadio.label);
    modes.appendChild(jsonRadio.label);
    form.appendChild(modes);

    var fieldsBox = el("div", "fields");
    var children = objectChildren(fieldsBox, Object.assign({ properties: {} }, schema));
    if (!Object.keys(schema.properties || {}).length) fieldsBox.appendChild(el("p", "muted", "No parameters."));
    form.appendChild(fieldsBox);

    var raw = el("div", "raw");
    raw.hidden = true;
    var rawId = nextId("raw");
    var rawLabel = el("label", null, "Arguments (JSON object)");
    rawLabel.htmlFor = rawId;
    var textarea = el("textarea");
    textarea.id = rawId;
    textarea.spellcheck = false;
    textarea.value = "{}";
    raw.appendChild(rawLabel);
    raw.appendChild(textarea);
    form.appendChild(raw);

    var errorList = el("ul", "form-errors");
    errorList.setAttribute("role", "alert");
    form.appendChild(errorList);

    var actions = el("div", "actions");
    var button = el("button", "primary call-button", "Call");
    button.type = "submit";
    actions.appendChild(button);
    form.appendChild(actions);

    function jsonMode() {
      return jsonRadio.input.checked;
    }

    function showErrors(errors) {
      errorList.textContent = "";
      errors.forEach(function (problem) {
        errorList.appendChild(el("li", null, problem.text));
      });
    }

    function readRaw() {
      var value;
      try {
        value = JSON.parse(textarea.value || "{}");
      } catch (problem) {
        return { errors: [{ text: "The arguments are not valid JSON: " + problem.message, input: textarea }] };
      }
      if (!value || typeof value !== "object" || Array.isArray(value))
        return { errors: [{ text: "The arguments must be a JSON object", input: textarea }] };
      var missing = (schema.required || []).filter(function (key) {
        return !(key in value);
      });
      if (missing.length) return { errors: [{ text: "Missing required: " + missing.join(", "), input: textarea }] };
      return { value: value, errors: [] };
    }

    function read() {
      if (jsonMode()) return readRaw();
      var got = children.read();
      return { value: got.value, errors: got.errors };
    }

    formRadio.input.addEventListener("change", function () {
      var got = readRaw();
      if (got.errors.length) {
        showErrors(got.errors);
        jsonRadio.input.checked = true;
        return;
      }
      children.write(got.value);
      showErrors([]);
      raw.hidden = true;
      fieldsBox.hidden = false;
    });
    jsonRadio.input.addEventListener("change", function () {
      textarea.value = json(children.read().value);
      showErrors([]);
      raw.hidden = false;
      fieldsBox.hidden = true;
    });

    form.addEventListener("submit", function (event) {
      event.preventDefault();
      var got = read();
      showErrors(got.errors);
      if (got.errors.length) {
        var first = got.errors[0].input;
        if (first && first.focus) first.focus();
        return;
      }
      startCall(card, tool.name, got.value);
    });

    if (!generated) {
      jsonRadio.input.checked = true;
      raw.hidden = false;
      fieldsBox.hidden = true;
    }
    return {
      node: form,
      currentValue: function () {
        var got = read();
        return got.value;
      },
      fill: function (value) {
        if (value && typeof value === "object") {
          children.write(value);
          textarea.value = json(value);
        }
      },
    };
  }

  function radio(group, value, text, checked) {
    var label = el("label");
    var input = el("input");
    input.type = "radio";
    input.name = group;
    input.value = value;
    input.checked = checked;
    label.appendChild(input);
    label.appendChild(document.createTextNode(" " + text));
    return { label: label, input: input };
  }

  // -- calls -------------------------------------------------------------------------------

  function applyTheme(theme) {
    if (theme !== "light" && theme !== "dark") return;
    document.documentElement.setAttribute("data-theme", theme);
    $("theme").value = theme;
  }

  // A call the page makes: shown, then sent.
  function startCall(card, tool, args) {
    callCounter += 1;
    var id = "c" + callCounter + "-" + Date.now().toString(36);
    addCall(card, id, tool, args, false);
    if (!send({ type: "call", call: id, tool: tool, arguments: args })) {
      finish(id, "lost", "not connected to the dev server");
    }
  }

  // A call's entry in its tool's card; byProgram: the program's call (the model's), which
  // every page is told of.
  function addCall(card, id, tool, args, byProgram) {
    var item = el("li", "call");
    item.setAttribute("data-call", id);
    item.setAttribute("data-state", "running");
    var head = el("header");
    var outcome = el("span", "outcome", "running\u2026");
    head.appendChild(outcome);
    head.appendChild(el("code", null, tool));
    if (byProgram) { // shown open, and scrolled to: nobody clicked to see it
      item.setAttribute("data-by", "program");
      head.appendChild(el("span", "by muted", "called by the program"));
      card.item.querySelector("details").open = true;
    }
    var cancel = el("button", "cancel", "Cancel");
    cancel.type = "button";
    cancel.setAttribute("aria-label", "Cancel this call of " + tool);
    head.appendChild(cancel);
    item.appendChild(head);
    item.appendChild(section("Arguments", args, "arguments"));
    var bar = el("progress");
    bar.setAttribute("aria-label", "Progress of " + tool);
    item.appendChild(bar);
    var progressText = el("div", "progress-text muted");
    item.appendChild(progressText);
    var logs = el("ol", "logs");
    logs.setAttribute("aria-label", "Logs");
    item.appendChild(logs);
    var row = el("div", "call-row");
    var output = el("div", "output");
    row.appendChild(output);
    item.appendChild(row);
    card.calls.prepend(item);
    if (byProgram && item.scrollIntoView) item.scrollIntoView({ block: "nearest" });
    var call = {
      item: item, tool: tool, outcome: outcome, cancel: cancel, bar: bar,
      progressText: progressText, logs: logs, output: output, row: row, running: true,
    };
    calls[id] = call;
    cancel.addEventListener("click", function () {
      if (send({ type: "cancel", call: id })) {
        cancel.disabled = true;
        outcome.textContent = "cancelling\u2026";
      }
    });
    return call;
  }

  function finish(id, outcome, text) {
    var call = calls[id];
    if (!call) return;
    call.running = false;
    call.item.setAttribute("data-state", outcome);
    call.outcome.textContent = text;
    call.cancel.remove();
    if (call.bar.getAttribute("value") === null) call.bar.remove(); // never reported
  }

  function callEvent(message) {
    var call = calls[message.call];
    if (!call && message.type === "started" && cards[message.tool]) {
      call = addCall(cards[message.tool], message.call, message.tool, message.arguments || {}, true);
    }
    if (!call) return;
    var ms = message.ms !== undefined ? " in " + message.ms + " ms" : "";
    if (message.type === "started") {
      if (message.member) call.item.setAttribute("data-member", message.member);
    } else if (message.type === "progress") {
      if (typeof message.total === "number" && message.total > 0) {
        call.bar.max = message.total;
        call.bar.value = Math.min(message.progress, message.total);
      } else if (typeof message.progress === "number") {
        call.bar.removeAttribute("max");
        call.bar.removeAttribute("value");
      }
      var text = (message.progress === null ? "" : message.progress) + (message.total ? " / " + message.total : "");
      call.progressText.textContent = text + (message.message ? " \u2014 " + message.message : "");
      call.item.setAttribute("data-progress", String(message.progress));
    } else if (message.type === "log") {
      var line = el("li", "log " + message.level);
      line.appendChild(el("span", "level", message.level));
      line.appendChild(document.createTextNode(message.message || ""));
      if (message.data !== null && message.data !== undefined) line.appendChild(el("code", null, " " + JSON.stringify(message.data)));
      call.logs.appendChild(line);
      while (call.logs.children.length > MAX_LOGS) call.logs.firstChild.remove();
    } else if (message.type === "result") {
      var pre = el("pre", "result", typeof message.result === "string" ? message.result : json(message.result));
      pre.setAttribute("aria-label", "Result");
      call.output.appendChild(pre);
      finish(message.call, "done", "result" + ms);
    } else if (message.type === "error") {
      var error = message.error || {};
      var box = el("div", "error-box");
      box.appendChild(el("p", "error", error.message));
      var dl = el("dl", "facts");
      fact(dl, "error", error.type + (error.code ? " (" + error.code + ")" : ""));
      fact(dl, "member", error.member || "this process");
      var own = error.memberTool && error.memberTool !== error.tool ? " (" + error.memberTool + " in its member)" : "";
      fact(dl, "tool", (error.tool || call.tool) + own);
      box.appendChild(dl);
      call.output.appendChild(box);
      finish(message.call, "error", error.type + ms);
    } else if (message.type === "cancelled") {
      finish(message.call, "cancelled", "cancelled" + ms);
    }
  }

  // -- MCP Apps views ----------------------------------------------------------------------

  // A WebSocket URL for a path of the page's: "/view/v1" beside this page.
  function viewSocketUrl(path) {
    var url = new URL(String(path).replace(/^\/+/, ""), location.href);
    url.protocol = url.protocol === "https:" ? "wss:" : "ws:";
    url.hash = "";
    url.search = "";
    return url.href;
  }

  function createView(call, message) {
    var entry = { id: message.id, call: message.call, relay: null, iframe: null, loads: 0, count: 0 };
    var section = el("section", "app-view");
    section.setAttribute("data-view", message.id);
    section.setAttribute("aria-label", "View of " + call.tool);
    entry.section = section;
    entry.placeholder = el("div", "placeholder muted");
    section.appendChild(entry.placeholder);
    entry.box = el("div", "view-box");
    var bar = el("div", "view-bar");
    bar.appendChild(el("span", "view-title", message.title));
    entry.stateNode = el("span", "view-state");
    bar.appendChild(entry.stateNode);
    entry.modes = el("span", "modes");
    ["inline", "fullscreen", "pip"].forEach(function (mode) {
      var button = el("button", "mode", mode);
      button.type = "button";
      button.dataset.mode = mode;
      button.addEventListener("click", function () {
        send({ type: "view-mode", id: entry.id, mode: mode });
      });
      entry.modes.appendChild(button);
    });
    bar.appendChild(entry.modes);
    var close = el("button", "close", "Close view");
    close.type = "button";
    close.addEventListener("click", function () {
      send({ type: "view-close", id: entry.id });
    });
    entry.closeButton = close;
    bar.appendChild(close);
    entry.box.appendChild(bar);
    section.appendChild(entry.box);
    var details = el("details", "traffic");
    details.open = true;
    entry.trafficTitle = el("summary", null, "JSON-RPC traffic");
    details.appendChild(entry.trafficTitle);
    entry.traffic = el("ol", "traffic-log");
    entry.traffic.setAttribute("aria-label", "JSON-RPC traffic of the view");
    details.appendChild(entry.traffic);
    section.appendChild(details);
    call.row.appendChild(section);
    call.item.classList.add("has-view");
    views[message.id] = entry;
    return entry;
  }

  function showView(entry, view) {
    entry.last = view;
    entry.stateNode.textContent = view.state;
    entry.section.setAttribute("data-state", view.state);
    if (view.state === "closed") {
      ViewBox.disconnect(entry);
      entry.closeButton.disabled = true;
      entry.box.classList.remove("fullscreen", "pip");
      entry.section.classList.remove("away");
      Array.prototype.forEach.call(entry.modes.children, function (button) {
        button.disabled = true;
      });
      return;
    }
    if (view.state === "error") {
      ViewBox.showError(entry, view);
    } else {
      ViewBox.connect(entry, view, viewSocketUrl(view.socket), token);
    }
    ViewBox.showMode(entry, view, entry.section, "full screen");
  }

  function logTraffic(entry, message) {
    var rpc = message.message || {};
    var what = ViewBox.summary(rpc);
    entry.count += 1;
    var line = el("li", message.direction);
    line.setAttribute("data-method", rpc.method || "");
    var details = el("details");
    details.appendChild(el("summary", null, (message.direction === "in" ? "\u2190 " : "\u2192 ") + what));
    details.appendChild(el("pre", null, JSON.stringify(rpc, null, 1)));
    line.appendChild(details);
    entry.traffic.appendChild(line);
    while (entry.traffic.children.length > MAX_TRAFFIC) entry.traffic.firstChild.remove();
    entry.trafficTitle.textContent = "JSON-RPC traffic (" + entry.count + ")";
  }

  function viewEvent(message) {
    var entry = views[message.id];
    if (!entry) {
      var call = calls[message.call];
      if (!call || message.type !== "view") return;
      entry = createView(call, message);
    }
    if (message.type === "view") {
      showView(entry, message);
    } else if (message.type === "view-log") {
      logTraffic(entry, message);
    } else if (message.type === "view-size") {
      if (entry.iframe && typeof message.height === "number" && message.height > 0) {
        entry.iframe.style.height = Math.min(Math.ceil(message.height), 2000) + "px";
      }
    } else if (message.type === "view-message") {
      entry.section.appendChild(el("div", "view-message", message.text));
    } else if (message.type === "view-link") {
      var line = el("div", "view-link", "The view asks to open ");
      var a = el("a", null, message.url);
      a.href = message.url;
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      line.appendChild(a);
      entry.section.appendChild(line);
    }
  }

  // -- wiring ------------------------------------------------------------------------------

  $("filter").addEventListener("input", applyFilter);
  $("theme").addEventListener("change", function () {
    if (!send({ type: "theme", theme: $("theme").value })) notice("error", "not connected to the dev server");
  });
  $("format").addEventListener("change", function () {
    showExport(true);
  });
  $("copy").addEventListener("click", function () {
    var text = $("export").textContent;
    if (navigator.clipboard && navigator.clipboard.writeText) {
      navigator.clipboard.writeText(text).then(
        function () { notice("info", "Copied"); },
        function () { notice("error", "Could not copy: select the text instead"); }
      );
    } else {
      var range = document.createRange();
      range.selectNodeContents($("export"));
      var selection = window.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
    }
  });

  window.devPage = {
    snapshot: function () {
      return {
        status: $("status").textContent,
        theme: document.documentElement.getAttribute("data-theme"),
        members: state ? state.members.map(function (m) {
          return { name: m.name, state: m.state, error: m.error };
        }) : [],
        tools: state ? state.tools.map(function (t) { return t.name; }) : [],
        calls: Object.keys(calls).map(function (id) {
          var call = calls[id];
          return {
            id: id,
            tool: call.tool,
            state: call.item.getAttribute("data-state"),
            byProgram: call.item.getAttribute("data-by") === "program",
          };
        }),
        views: Object.keys(views).map(function (id) {
          var entry = views[id];
          return {
            id: id,
            call: entry.call,
            state: entry.last ? entry.last.state : null,
            displayMode: entry.last ? entry.last.displayMode : null,
            src: entry.iframe ? entry.iframe.src : null,
            sandbox: entry.iframe ? entry.iframe.getAttribute("sandbox") : null,
            relay: entry.relay ? entry.relay.status : null,
            loads: entry.loads,
            traffic: Array.prototype.map.call(entry.traffic.children, function (line) {
              return line.className + " " + line.querySelector("summary").textContent;
            }),
          };
        }),
      };
    },
  };

  connect();
})();
