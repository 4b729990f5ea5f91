// Every chart is drawn at its box's width when the page loads. When the window narrows
// afterwards (a phone turned upright, a desktop window dragged narrower) the chart must follow
// its box, or the page scrolls sideways. Loaded after the page's own scripts and before
// DOMContentLoaded, when they draw: every uPlot they make from then on is watched.
(function () {
  "use strict";
  var Plot = window.uPlot;
  if (!Plot || Plot.followsItsBox || !window.ResizeObserver) return;
  var MIN_WIDTH = 280; // the narrowest the pages draw a chart (their own Math.max(280, ...))

  function follow(plot) {
    var box = plot.root && plot.root.parentNode;
    if (!box) return;
    new window.ResizeObserver(function () {
      var width = Math.max(MIN_WIDTH, box.clientWidth);
      if (box.clientWidth && Math.abs(width - plot.width) > 1) {
        plot.setSize({ width: width, height: plot.height });
      }
    }).observe(box);
  }

  function Following(opts, data, target) {
    var plot = new Plot(opts, data, target);
    follow(plot);
    return plot;
  }
  Object.keys(Plot).forEach(function (key) { Following[key] = Plot[key]; });
  Following.prototype = Plot.prototype;
  Following.followsItsBox = true;
  window.uPlot = Following;
})();
