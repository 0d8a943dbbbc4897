// Focus stays where the person was after an htmx swap (#55.6). A Confirm or Dismiss replaces
// the whole review list, and focus fell to <body>: a keyboard user started again from the top
// of a page with hundreds of buttons. Before the request, remember where the pressed control
// sat (its group and its place in the list); after the swap, focus the control now in that
// place (the next suggestion's same button), else the group's first, else the count of what is left. A swap
// the focused element is not inside (the search box's own list) leaves focus alone.
(function () {
  "use strict";
  var place = null;
  document.addEventListener("htmx:beforeRequest", function (event) {
    var focused = document.activeElement;
    var swapped = event.detail && event.detail.target;
    place = null;
    if (!focused || !swapped || !swapped.contains(focused)) {
      return;
    }
    var section = focused.closest("section[aria-labelledby]");
    var item = focused.closest("li");
    place = {
      decision: focused.getAttribute("name"),  // a row's "suggestion" (confirm) or "dismiss"
      section: section ? section.getAttribute("aria-labelledby") : null,
      index: item && item.parentNode ? Array.prototype.indexOf.call(item.parentNode.children, item) : -1,
      target: swapped.id
    };
  });
  document.addEventListener("htmx:afterSettle", function () {
    if (!place) {
      return;
    }
    var found = null;
    var section = place.section
      ? document.querySelector('section[aria-labelledby="' + place.section + '"]')
      : null;
    if (section) {
      var items = section.querySelectorAll("li");
      if (place.index >= 0 && items.length) {
        var item = items[Math.min(place.index, items.length - 1)];
        var same = place.decision ? 'button[name="' + place.decision + '"]' : "button:not([name])";
        found = item.querySelector(same + ":not([disabled])") || item.querySelector("button:not([disabled])");
      }
      if (!found) {
        found = section.querySelector("button:not([disabled])");
      }
    }
    if (!found) {
      found = document.getElementById("remaining") || document.getElementById(place.target);
      if (found && !found.hasAttribute("tabindex")) {
        found.setAttribute("tabindex", "-1");
      }
    }
    place = null;
    if (found) {
      found.focus();
    }
  });
})();
