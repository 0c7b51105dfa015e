// A minimal page (replaced by the full inspector page): the state and the records, as text only.
"use strict";
(function () {
  const state = document.getElementById("state");
  const connection = document.getElementById("connection");
  const records = document.getElementById("records");
  const events = new EventSource("events?after=0");
  events.addEventListener("state", function (event) {
    const data = JSON.parse(event.data);
    state.textContent = JSON.stringify(data, null, 2);
    connection.textContent = data.connected ? "connected to " + data.target : (data.error || "not connected");
  });
  events.addEventListener("record", function (event) {
    const record = JSON.parse(event.data);
    const item = document.createElement("li");
    item.textContent = record.seq + " " + record.kind + " " + (record.label || record.text || record.line || "");
    records.appendChild(item);
  });
})();
