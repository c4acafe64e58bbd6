// tracer report: sort and filter the support matrix. No network, no libraries.
(function () {
  "use strict";
  var table = document.getElementById("matrix");
  if (!table) return;
  var body = table.tBodies[0];
  var rows = Array.prototype.slice.call(body.rows);
  var search = document.getElementById("filter-text");
  var protocolSelect = document.getElementById("filter-protocol");
  var verdictSelect = document.getElementById("filter-verdict");
  var shown = document.getElementById("shown");
  var reset = document.getElementById("filter-reset");
  var slugFilter = "";

  function matches(row) {
    var text = (search.value || "").trim().toLowerCase();
    if (text && row.getAttribute("data-search").indexOf(text) < 0) return false;
    var verdict = verdictSelect.value, protocol = protocolSelect.value;
    if (verdict) {
      var verdicts = row.getAttribute("data-verdicts").split(" ");
      var wanted = protocol ? [protocol + ":" + verdict] : null;
      var hit = verdicts.some(function (v) {
        return wanted ? v === wanted[0] : v.slice(v.lastIndexOf(":") + 1) === verdict;
      });
      if (!hit) return false;
    }
    if (slugFilter) {
      var slugs = " " + row.getAttribute("data-slugs") + " ";
      if (slugs.indexOf(" " + slugFilter + " ") < 0) return false;
    }
    return true;
  }

  // The filter lives in the address (#verdict=broken&protocol=…&q=…&slug=…&sort=3),
  // so a filtered view can be bookmarked or shared as a file:// link.
  function readHash() {
    var state = {};
    (location.hash || "").replace(/^#/, "").split("&").forEach(function (pair) {
      var at = pair.indexOf("=");
      if (at > 0) {
        try { state[pair.slice(0, at)] = decodeURIComponent(pair.slice(at + 1)); } catch (e) { /* ignore a bad escape */ }
      }
    });
    return state;
  }

  function writeHash() {
    var parts = [];
    if (search.value) parts.push("q=" + encodeURIComponent(search.value));
    if (protocolSelect.value) parts.push("protocol=" + encodeURIComponent(protocolSelect.value));
    if (verdictSelect.value) parts.push("verdict=" + encodeURIComponent(verdictSelect.value));
    if (slugFilter) parts.push("slug=" + encodeURIComponent(slugFilter));
    if (sortState) parts.push("sort=" + sortState);
    var hash = parts.length ? "#" + parts.join("&") : "";
    if (hash !== location.hash && history.replaceState) {
      try { history.replaceState(null, "", hash || location.pathname); } catch (e) { /* file:// may refuse */ }
    }
  }

  function selectValue(select, value) {
    var known = Array.prototype.some.call(select.options, function (o) { return o.value === value; });
    select.value = known ? value : "";
  }

  var sortState = "";

  function apply() {
    writeHash();
    var count = 0;
    rows.forEach(function (row) {
      var ok = matches(row);
      row.hidden = !ok;
      if (ok) count += 1;
    });
    shown.textContent = "showing " + count + " of " + rows.length + " entry classes";
    document.querySelectorAll("[data-slug]").forEach(function (b) {
      b.classList.toggle("active", b.getAttribute("data-slug") === slugFilter);
    });
    document.querySelectorAll("[data-verdict]").forEach(function (b) {
      var same = b.getAttribute("data-verdict") === verdictSelect.value &&
        (b.getAttribute("data-protocol") || "") === protocolSelect.value;
      b.classList.toggle("active", same);
    });
  }

  search.addEventListener("input", apply);
  protocolSelect.addEventListener("change", apply);
  verdictSelect.addEventListener("change", apply);
  reset.addEventListener("click", function () {
    search.value = ""; protocolSelect.value = ""; verdictSelect.value = ""; slugFilter = "";
    apply();
  });
  document.querySelectorAll("[data-verdict]").forEach(function (button) {
    button.addEventListener("click", function () {
      var v = button.getAttribute("data-verdict"), p = button.getAttribute("data-protocol") || "";
      var again = verdictSelect.value === v && protocolSelect.value === p;
      verdictSelect.value = again ? "" : v;
      protocolSelect.value = again ? "" : p;
      apply();
      table.scrollIntoView({ behavior: "smooth", block: "start" });
    });
  });
  document.querySelectorAll("[data-slug]").forEach(function (button) {
    button.addEventListener("click", function () {
      var s = button.getAttribute("data-slug");
      slugFilter = slugFilter === s ? "" : s;
      apply();
    });
  });

  // Sorting: every sortable header sorts by its cells' data-sort (number or text).
  var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
  var sorters = {};
  headers.forEach(function (th, column) {
    if (!th.classList.contains("sortable")) return;
    th.tabIndex = 0;
    function sort(forceDescending) {
      var descending = typeof forceDescending === "boolean" ? forceDescending : th.getAttribute("aria-sort") === "ascending";
      sortState = (descending ? "-" : "") + column;
      headers.forEach(function (h) { h.removeAttribute("aria-sort"); });
      th.setAttribute("aria-sort", descending ? "descending" : "ascending");
      var keyed = rows.map(function (row, index) {
        var cell = row.cells[column];
        var key = cell.getAttribute("data-sort");
        if (key === null) key = cell.textContent.trim().toLowerCase();
        var number = Number(key);
        return { row: row, key: key !== "" && !isNaN(number) ? number : key, index: index };
      });
      keyed.sort(function (a, b) {
        var order = a.key < b.key ? -1 : a.key > b.key ? 1 : a.index - b.index;
        return descending ? -order : order;
      });
      keyed.forEach(function (k) { body.appendChild(k.row); });
      rows = keyed.map(function (k) { return k.row; });
      writeHash();
    }
    sorters[column] = sort;
    th.addEventListener("click", function () { sort(); });
    th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); } });
  });

  var initial = readHash();
  search.value = initial.q || "";
  selectValue(protocolSelect, initial.protocol || "");
  selectValue(verdictSelect, initial.verdict || "");
  slugFilter = initial.slug || "";
  var sortMatch = /^(-?)(\d+)$/.exec(initial.sort || "");
  if (sortMatch && sorters[Number(sortMatch[2])]) sorters[Number(sortMatch[2])](sortMatch[1] === "-");
  apply();
})();
