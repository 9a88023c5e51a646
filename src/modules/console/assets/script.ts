/**
 * The console's progressive enhancement: every screen works with plain forms and links; this
 * adds confirmations, keyboard navigation of tables, copy buttons, extra answer fields, and the
 * document upload of an analyst's answer (mint a slot, PUT the file, then submit the form).
 */
export const SCRIPT = `
(function () {
  "use strict";
  var csrf = (document.querySelector('meta[name="csrf-token"]') || {}).content || "";

  document.addEventListener("submit", function (event) {
    var form = event.target;
    var message = form.getAttribute("data-confirm");
    if (message && !window.confirm(message)) event.preventDefault();
  });

  document.addEventListener("click", function (event) {
    var button = event.target.closest("[data-copy]");
    if (!button) return;
    var source = document.getElementById(button.getAttribute("data-copy"));
    if (source && navigator.clipboard) {
      navigator.clipboard.writeText(source.textContent.trim()).then(function () {
        button.textContent = "Copied";
      });
    }
  });

  document.addEventListener("click", function (event) {
    var add = event.target.closest("[data-add-field]");
    if (!add) return;
    var template = document.getElementById(add.getAttribute("data-add-field"));
    var rows = add.parentNode.querySelector("[data-field-rows]");
    if (template && rows) {
      rows.appendChild(template.content.cloneNode(true));
      var inputs = rows.querySelectorAll("input");
      if (inputs.length >= 2) inputs[inputs.length - 2].focus();
    }
  });

  // j / k move through the rows of a [data-keyboard] table; Enter opens the selected row's link.
  var table = document.querySelector("table[data-keyboard]");
  if (table) {
    var rows = Array.prototype.slice.call(table.querySelectorAll("tbody tr"));
    var index = -1;
    var select = function (next) {
      if (rows.length === 0) return;
      if (index >= 0) rows[index].classList.remove("selected");
      index = Math.max(0, Math.min(rows.length - 1, next));
      rows[index].classList.add("selected");
      var link = rows[index].querySelector("a");
      if (link) link.focus();
    };
    document.addEventListener("keydown", function (event) {
      var tag = (event.target.tagName || "").toLowerCase();
      if (tag === "input" || tag === "textarea" || tag === "select" || event.ctrlKey || event.metaKey || event.altKey) return;
      if (event.key === "j") { select(index + 1); event.preventDefault(); }
      if (event.key === "k") { select(index - 1); event.preventDefault(); }
    });
  }

  // An answer with documents: each chosen file gets an upload slot, is PUT to it, and the form
  // is then submitted with the slots' ids.
  Array.prototype.forEach.call(document.querySelectorAll("form[data-upload]"), function (form) {
    form.addEventListener("submit", function (event) {
      var input = form.querySelector('input[type="file"]');
      if (!input || input.files.length === 0 || form.dataset.uploaded === "1") return;
      event.preventDefault();
      var status = form.querySelector("[data-upload-status]");
      var files = Array.prototype.slice.call(input.files);
      if (status) status.textContent = "Uploading " + files.length + " document(s)…";
      var uploadOne = function (file) {
        return fetch(form.getAttribute("data-upload"), {
          method: "POST",
          credentials: "same-origin",
          headers: { "content-type": "application/json", "csrf-token": csrf },
          body: JSON.stringify({ filename: file.name, contentType: file.type, sizeBytes: file.size })
        }).then(function (res) {
          return res.json().then(function (body) {
            if (!res.ok) throw new Error(body.message || body.error || "the upload slot was refused");
            return fetch(body.uploadUrl, {
              method: "PUT",
              headers: { "content-type": file.type, "if-none-match": "*" },
              body: file
            }).then(function (put) {
              if (!put.ok) throw new Error("the upload of " + file.name + " failed (" + put.status + ")");
              var hidden = document.createElement("input");
              hidden.type = "hidden";
              hidden.name = "uploadId";
              hidden.value = body.uploadId;
              form.appendChild(hidden);
            });
          });
        });
      };
      files.reduce(function (chain, file) {
        return chain.then(function () { return uploadOne(file); });
      }, Promise.resolve()).then(function () {
        form.dataset.uploaded = "1";
        input.disabled = true;
        form.submit();
      }).catch(function (err) {
        if (status) status.textContent = err.message;
      });
    });
  });

  // A file of one value a line: read here, sent in parts of data-lines-chunk values as JSON
  // ({add} or {remove}, by the form's mode), one after the other; then the page shows the result.
  Array.prototype.forEach.call(document.querySelectorAll("form[data-lines-upload]"), function (form) {
    form.addEventListener("submit", function (event) {
      var input = form.querySelector('input[type="file"]');
      if (!input || input.files.length === 0) return;
      event.preventDefault();
      var status = form.querySelector("[data-upload-status]");
      var mode = (form.querySelector('[name="mode"]') || {}).value === "remove" ? "remove" : "add";
      var size = Number(form.getAttribute("data-lines-chunk")) || 10000;
      var say = function (text) { if (status) status.textContent = text; };
      input.files[0].text().then(function (text) {
        var values = text.split(/\\r?\\n/).filter(function (line) { return line.trim() !== ""; });
        if (values.length === 0) throw new Error("The file holds no values.");
        var parts = [];
        for (var at = 0; at < values.length; at += size) parts.push(values.slice(at, at + size));
        return parts.reduce(function (chain, part, i) {
          return chain.then(function () {
            say("Sending part " + (i + 1) + " of " + parts.length + " (" + values.length + " values)…");
            var body = {};
            body[mode] = part;
            return fetch(form.getAttribute("data-lines-upload"), {
              method: "POST",
              credentials: "same-origin",
              headers: { "content-type": "application/json", "csrf-token": csrf },
              body: JSON.stringify(body)
            }).then(function (res) {
              return res.json().then(function (answer) {
                if (!res.ok) throw new Error("Part " + (i + 1) + " was refused: " + (answer.error || res.status));
              });
            });
          });
        }, Promise.resolve());
      }).then(function () {
        window.location.assign(form.getAttribute("data-lines-done"));
      }).catch(function (err) {
        say(err.message);
      });
    });
  });
})();
`;
