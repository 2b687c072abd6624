import assert from "node:assert/strict";
import { test } from "node:test";
import { SETTINGS } from "../config";
import { ALLOW_PRIVATE_VARIABLE, isBlockedAddress, webhookUrlProblem } from "./addresses";

const blocked = [
  "0.0.0.0",
  "0.1.2.3",
  "10.0.0.1",
  "10.255.255.255",
  "100.64.0.1",
  "100.127.255.254",
  "127.0.0.1",
  "127.255.255.254",
  "169.254.169.254",
  "172.16.0.1",
  "172.31.255.255",
  "192.0.0.8",
  "192.0.2.1",
  "192.168.1.1",
  "198.18.0.1",
  "198.19.255.255",
  "198.51.100.7",
  "203.0.113.9",
  "224.0.0.1",
  "239.255.255.250",
  "240.0.0.1",
  "255.255.255.255",
  "::",
  "::1",
  "[::1]",
  "::127.0.0.1",
  "fe80::1",
  "fe80::1%eth0",
  "febf:ffff::1",
  "fc00::1",
  "fd12:3456:789a::1",
  "ff02::1",
  "ff0e::101",
  "2001:db8::1",
  "2001:db8:ffff::1",
  "::ffff:127.0.0.1",
  "::ffff:7f00:1",
  "::ffff:10.1.2.3",
  "::ffff:169.254.169.254",
  "::ffff:0:192.168.0.1",
  "64:ff9b::127.0.0.1",
  "64:ff9b::a9fe:a9fe",
  "64:ff9b:1::1",
  "2002:7f00:1::1",
  "2002:c0a8:101::1",
  "2001::1",
  "100::1",
  "3fff::1",
];

const allowed = [
  "8.8.8.8",
  "1.1.1.1",
  "93.184.216.34",
  "100.63.255.255",
  "100.128.0.0",
  "172.15.255.255",
  "172.32.0.0",
  "169.253.255.255",
  "192.0.1.1",
  "198.17.255.255",
  "198.20.0.0",
  "223.255.255.255",
  "::ffff:8.8.8.8",
  "::ffff:808:808",
  "64:ff9b::8.8.8.8",
  "2002:808:808::1",
  "2606:4700:4700::1111",
  "2001:4860:4860::8888",
  "2a00:1450:4001:81c::200e",
];

for (const ip of blocked) {
  test(`blocks ${ip}`, () => assert.equal(isBlockedAddress(ip), true));
}
for (const ip of allowed) {
  test(`allows public address ${ip}`, () => assert.equal(isBlockedAddress(ip), false));
}

test("anything that is not an IP address counts as blocked", () => {
  for (const value of ["", "localhost", "example.com", "256.0.0.1", "1.2.3", "::ffff:1.2.3.4.5", "[8.8.8.8]"]) {
    assert.equal(isBlockedAddress(value), true, value);
  }
});

test("a public https URL has no problem", () => {
  assert.equal(webhookUrlProblem("https://agent.example.com/hooks/tab?x=1", false), undefined);
  assert.equal(webhookUrlProblem("https://8.8.8.8:8443/hook", false), undefined);
  assert.equal(webhookUrlProblem("https://[2606:4700:4700::1111]/hook", false), undefined);
});

test("http to a loopback or private address names the address and the setting, not https", () => {
  assert.equal(
    webhookUrlProblem("http://127.0.0.1:8788/hook", false),
    "Webhook URL points at 127.0.0.1, a loopback address (this machine): refused unless the relay runs with TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true (for an agent on this machine or a private network).",
  );
  assert.match(
    webhookUrlProblem("http://[::1]:8788/hook", false) ?? "",
    /^Webhook URL points at ::1, a loopback address/,
  );
  assert.match(
    webhookUrlProblem("http://localhost:8788/hook", false) ?? "",
    /^Webhook URL points at localhost, a loopback name \(this machine\): .*TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true/,
  );
  assert.match(
    webhookUrlProblem("http://192.168.1.20/hook", false) ?? "",
    /^Webhook URL points at 192\.168\.1\.20, a private, link-local or reserved address: .*TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true/,
  );
  assert.equal(webhookUrlProblem("http://127.0.0.1:8788/hook", true), undefined);
});

test("the setting named is the one the configuration reads", () => {
  assert.equal(ALLOW_PRIVATE_VARIABLE, SETTINGS.webhookAllowPrivate.env);
});

test("http is refused unless private targets are allowed", () => {
  assert.match(webhookUrlProblem("http://agent.example.com/hook", false) ?? "", /https/);
  assert.equal(webhookUrlProblem("http://agent.example.com/hook", true), undefined);
});

test("schemes other than http and https are refused either way", () => {
  for (const allowPrivate of [false, true]) {
    for (const url of [
      "ftp://agent.example.com/",
      "file:///etc/passwd",
      "javascript:alert(1)",
      "ws://agent.example.com/",
    ]) {
      assert.ok(webhookUrlProblem(url, allowPrivate), `${url} allowPrivate=${allowPrivate}`);
    }
  }
});

test("text that is not an absolute URL is refused", () => {
  for (const url of ["", "agent.example.com/hook", "/hook", "https://", "https://exa mple.com/"]) {
    assert.match(webhookUrlProblem(url, true) ?? "", /not a valid/, url);
  }
});

test("credentials in the URL are refused even on a private network", () => {
  assert.match(webhookUrlProblem("https://user:pass@agent.example.com/", false) ?? "", /user name or password/);
  assert.match(webhookUrlProblem("https://token@agent.example.com/", true) ?? "", /user name or password/);
});

test("localhost names are refused unless private targets are allowed", () => {
  for (const url of [
    "https://localhost/hook",
    "https://LOCALHOST:8443/",
    "https://localhost./",
    "https://api.localhost/",
  ]) {
    assert.match(webhookUrlProblem(url, false) ?? "", /localhost/, url);
    assert.equal(webhookUrlProblem(url, true), undefined, url);
  }
});

test("literal blocked addresses are refused in every spelling the URL parser accepts", () => {
  const urls = [
    "https://127.0.0.1/",
    "https://2130706433/",
    "https://0x7f.1/",
    "https://0177.0.0.1/",
    "https://169.254.169.254/latest/meta-data",
    "https://10.1.2.3:8443/",
    "https://[::1]/",
    "https://[::ffff:127.0.0.1]/",
    "https://[fe80::1]/",
    "https://0.0.0.0/",
  ];
  for (const url of urls) {
    assert.match(
      webhookUrlProblem(url, false) ?? "",
      /^Webhook URL points at \S+, a (loopback address \(this machine\)|private, link-local or reserved address): refused unless the relay runs with TAB_RELAY_WEBHOOK_ALLOW_PRIVATE=true /,
      url,
    );
    assert.equal(webhookUrlProblem(url, true), undefined, url);
  }
});

test("URLs longer than 2048 characters are refused", () => {
  const base = "https://agent.example.com/";
  assert.equal(webhookUrlProblem(base + "a".repeat(2048 - base.length), false), undefined);
  assert.match(webhookUrlProblem(base + "a".repeat(2049 - base.length), true) ?? "", /2048/);
});
