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

  function apply() {
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
  headers.forEach(function (th, column) {
    if (!th.classList.contains("sortable")) return;
    th.tabIndex = 0;
    function sort() {
      var descending = th.getAttribute("aria-sort") === "ascending";
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
    }
    th.addEventListener("click", sort);
    th.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sort(); } });
  });

  apply();
})();
