/**
 * `Retry-After` (RFC 9110 §10.2.3) is `HTTP-date / delay-seconds`. This is its one reader: the extension, the relay's
 * webhook client and the agent helper all call it, each with the time of its own injected clock.
 *
 * - delay-seconds is a non-negative decimal integer (RFC 9110 §10.2.3); "1.5", "-1" and "+1" are not.
 * - HTTP-date is any of the three formats recipients must accept (RFC 9110 §5.6.7), always in GMT: IMF-fixdate
 *   (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
 *   (`Sun Nov  6 08:49:37 1994`). Nothing else is a date here: not ISO 8601, not a date with a numeric offset, not
 *   whatever else `Date.parse` happens to accept (it reads "1.5" as a day in 2001 and asctime in local time).
 * - A date in the past means "now": 0.
 * - Day and month names are read in any case; a day name that does not match the date is not checked (nothing
 *   depends on it, and refusing the header would only lose the rest of it). A day that does not exist in its month
 *   (31 Feb) makes the value invalid rather than rolling into the next month.
 * - A delay too large for a 32-bit signed count of seconds is read as 2^31 seconds, as RFC 9111 §1.2.2 has caches
 *   read such delta-seconds; callers cap the wait to their own maximum anyway.
 *
 * @param now the current time in milliseconds since the epoch, from the caller's clock
 * @returns the delay in whole milliseconds, or undefined when the value is absent or neither form
 */
export function parseRetryAfterMs(value: string | null | undefined, now: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  // Field values arrive without surrounding whitespace from a conforming parser; a proxy may still add some.
  const text = value.trim();
  if (text === "") return undefined;
  if (/^\d+$/.test(text)) return Math.min(Number(text), MAX_DELAY_SECONDS) * 1000;
  const at = parseHttpDate(text, now);
  return at === undefined ? undefined : Math.max(0, at - now);
}

/** RFC 9111 §1.2.2's stand-in for a delta-seconds value too large to hold. */
const MAX_DELAY_SECONDS = 2 ** 31;

const DAY_NAMES = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];
const LONG_DAY_NAMES = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"];
const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];

const TIME = "(\\d{2}):(\\d{2}):(\\d{2})";
const IMF_FIXDATE = new RegExp(`^([a-z]{3}), (\\d{2}) ([a-z]{3}) (\\d{4}) ${TIME} gmt$`, "i");
const RFC850_DATE = new RegExp(`^([a-z]{6,9}), (\\d{2})-([a-z]{3})-(\\d{2}) ${TIME} gmt$`, "i");
const ASCTIME_DATE = new RegExp(`^([a-z]{3}) ([a-z]{3}) ([ \\d]\\d) ${TIME} (\\d{4})$`, "i");

/**
 * An HTTP-date (RFC 9110 §5.6.7) as milliseconds since the epoch, or undefined. `now` places an RFC 850 two-digit
 * year: a year that would be more than 50 years in the future is the most recent past year with those digits.
 */
export function parseHttpDate(text: string, now: number): number | undefined {
  let match = IMF_FIXDATE.exec(text);
  if (match) {
    const [, dayName, day, month, year, hour, minute, second] = match as unknown as string[];
    if (!DAY_NAMES.includes(lower(dayName))) return undefined;
    return utc(Number(year), month, day, hour, minute, second);
  }
  match = RFC850_DATE.exec(text);
  if (match) {
    const [, dayName, day, month, shortYear, hour, minute, second] = match as unknown as string[];
    if (!LONG_DAY_NAMES.includes(lower(dayName))) return undefined;
    const thisYear = new Date(now).getUTCFullYear();
    let year = Math.floor(thisYear / 100) * 100 + Number(shortYear);
    if (year > thisYear + 50) year -= 100;
    return utc(year, month, day, hour, minute, second);
  }
  match = ASCTIME_DATE.exec(text);
  if (match) {
    const [, dayName, month, day, hour, minute, second, year] = match as unknown as string[];
    if (!DAY_NAMES.includes(lower(dayName))) return undefined;
    return utc(Number(year), month, (day as string).trim(), hour, minute, second);
  }
  return undefined;
}

function lower(text: string | undefined): string {
  return (text ?? "").toLowerCase();
}

function utc(
  year: number,
  monthName: string | undefined,
  day: string | undefined,
  hour: string | undefined,
  minute: string | undefined,
  second: string | undefined,
): number | undefined {
  const month = MONTHS.indexOf(lower(monthName));
  const [d, h, m, s] = [day, hour, minute, second].map(Number) as [number, number, number, number];
  // 60 is a leap second (RFC 9110 §5.6.7): it counts into the next minute.
  if (month === -1 || h > 23 || m > 59 || s > 60) return undefined;
  // setUTCFullYear, unlike Date.UTC, takes years below 100 as they are; it rolls 31 Feb into March, which is caught.
  const midnight = new Date(0);
  midnight.setUTCFullYear(year, month, d);
  if (midnight.getUTCDate() !== d || midnight.getUTCMonth() !== month) return undefined;
  return midnight.getTime() + ((h * 60 + m) * 60 + s) * 1000;
}
