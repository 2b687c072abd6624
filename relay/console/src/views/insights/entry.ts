/** insights.js: the Insights view and uPlot, loaded by the console when Insights is first opened. */
import { renderInsights } from "./insights";

window.tabRelayInsights = { render: renderInsights };
