import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { parseRetryAfterMs } from "./retryAfter";

/** 1994-11-06 08:49:00 GMT, 37 seconds before RFC 9110's example date. */
const NOW = Date.UTC(1994, 10, 6, 8, 49, 0);
const NEW_YEAR_2025 = Date.parse("2025-01-01T00:00:00Z");

interface Case {
  why: string;
  value: string | null | undefined;
  now?: number;
  ms: number | undefined;
}

const cases: Case[] = [
  // delay-seconds
  { why: "delay-seconds in milliseconds", value: "120", ms: 120_000 },
  { why: "a delay of 0 is now", value: "0", ms: 0 },
  { why: "surrounding whitespace is trimmed", value: " 0 ", ms: 0 },
  { why: "leading zeros are digits too", value: "007", ms: 7000 },
  {
    why: "a delay past 2^31 seconds is read as 2^31 seconds (RFC 9111 §1.2.2)",
    value: "99999999999999999999999",
    ms: 2 ** 31 * 1000,
  },
  { why: "a fraction is not delay-seconds", value: "1.5", ms: undefined },
  { why: "a negative delay is not delay-seconds", value: "-5", ms: undefined },
  { why: "a signed delay is not delay-seconds", value: "+5", ms: undefined },
  { why: "digits with a unit are not delay-seconds", value: "5s", ms: undefined },
  // the three HTTP-date forms
  { why: "IMF-fixdate", value: "Sun, 06 Nov 1994 08:49:37 GMT", ms: 37_000 },
  { why: "RFC 850 date", value: "Sunday, 06-Nov-94 08:49:37 GMT", ms: 37_000 },
  { why: "asctime date, in GMT whatever the local time zone", value: "Sun Nov  6 08:49:37 1994", ms: 37_000 },
  { why: "asctime with a two-digit day", value: "Sun Nov 06 08:49:37 1994", ms: 37_000 },
  { why: "names in any case", value: "SUN, 06 NOV 1994 08:49:37 gmt", ms: 37_000 },
  { why: "a day name that does not match the date is not checked", value: "Mon, 06 Nov 1994 08:49:37 GMT", ms: 37_000 },
  { why: "a leap second counts into the next minute", value: "Sun, 06 Nov 1994 08:49:60 GMT", ms: 60_000 },
  { why: "a date seconds ahead", value: "Wed, 01 Jan 2025 00:00:30 GMT", now: NEW_YEAR_2025, ms: 30_000 },
  { why: "a date in the past is now", value: "Tue, 31 Dec 2024 00:00:00 GMT", now: NEW_YEAR_2025, ms: 0 },
  // RFC 850 two-digit years: more than 50 years ahead is the previous century (RFC 9110 §5.6.7)
  {
    why: "a two-digit year up to 50 years ahead is this century",
    value: "Monday, 01-Jan-74 00:00:00 GMT",
    now: NEW_YEAR_2025,
    ms: Date.UTC(2074, 0, 1) - NEW_YEAR_2025,
  },
  {
    why: "a two-digit year more than 50 years ahead is last century, so past",
    value: "Friday, 01-Jan-99 00:00:00 GMT",
    now: NEW_YEAR_2025,
    ms: 0,
  },
  // neither form
  { why: "absent (a Headers lookup)", value: null, ms: undefined },
  { why: "absent (a Node header)", value: undefined, ms: undefined },
  { why: "empty", value: "", ms: undefined },
  { why: "blank", value: "   ", ms: undefined },
  { why: "a word", value: "soon", ms: undefined },
  { why: "ISO 8601 is not an HTTP-date", value: "2030-01-01", ms: undefined },
  { why: "ISO 8601 with a time is not an HTTP-date", value: "2030-01-01T00:00:00Z", ms: undefined },
  { why: "a day and month without the rest", value: "12 Nov 2026", ms: undefined },
  { why: "an HTTP-date is in GMT, not at an offset", value: "Sun, 06 Nov 1994 08:49:37 +0200", ms: undefined },
  { why: "an IMF-fixdate needs GMT", value: "Sun, 06 Nov 1994 08:49:37", ms: undefined },
  { why: "an unknown month", value: "Sun, 06 Foo 1994 08:49:37 GMT", ms: undefined },
  { why: "an unknown month and day 99", value: "Sun, 99 Foo 1994 08:49:37 GMT", ms: undefined },
  { why: "delay-seconds from the same clock", value: "120", now: NEW_YEAR_2025, ms: 120_000 },
  { why: "an unknown day name", value: "Xyz, 06 Nov 1994 08:49:37 GMT", ms: undefined },
  {
    why: "a day that does not exist in its month does not roll over",
    value: "Wed, 31 Feb 2026 00:00:00 GMT",
    ms: undefined,
  },
  { why: "day 00", value: "Sun, 00 Nov 1994 08:49:37 GMT", ms: undefined },
  { why: "hour 24", value: "Sun, 06 Nov 1994 24:00:00 GMT", ms: undefined },
  { why: "a short day name in the RFC 850 form", value: "Sun, 06-Nov-94 08:49:37 GMT", ms: undefined },
];

describe("parseRetryAfterMs", () => {
  for (const { why, value, now = NOW, ms } of cases) {
    test(`${why}: ${JSON.stringify(value)} → ${String(ms)}`, () => {
      assert.equal(parseRetryAfterMs(value, now), ms);
    });
  }

  test("reads dates against the clock it is given, not the wall clock", () => {
    const value = "Sun, 06 Nov 1994 08:49:37 GMT";
    assert.equal(parseRetryAfterMs(value, NOW), 37_000);
    assert.equal(parseRetryAfterMs(value, NOW - 63_000), 100_000);
  });
});
