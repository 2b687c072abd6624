import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { channelNameFor, detailLabel, humanMessage, isChannelName, withNames } from "./wording";

describe("the console's wording of relay errors", () => {
  test("a field followed by what it must be reads as one sentence with the field's label", () => {
    assert.equal(humanMessage("webhook_url: must use https"), "The webhook URL must use https.");
    assert.equal(humanMessage("tab_context.entity_id is required"), "tab_context.entity_id is required");
    assert.equal(humanMessage("name: is required"), "The name is required.");
  });

  test("a field followed by a sentence of its own loses the field name", () => {
    assert.equal(humanMessage("name: an agent named Echo already exists"), "An agent named Echo already exists.");
    assert.equal(humanMessage("path.id: no channel ch_1 in this workspace"), "No channel ch_1 in this workspace.");
    assert.equal(
      humanMessage("api_key: this key is not recognised, or it was revoked."),
      "This key is not recognised, or it was revoked.",
    );
  });

  test("a message without a field first is kept as the relay wrote it", () => {
    assert.equal(humanMessage("You are not in this channel"), "You are not in this channel");
    assert.equal(
      humanMessage("Could not reach the relay. Check the connection and try again."),
      "Could not reach the relay. Check the connection and try again.",
    );
  });
});

describe("people in the relay's messages", () => {
  test("a person named by id reads with their name, so the last owner's refusal is a sentence about them", () => {
    const names = new Map([["usr_Abc123", "Olive Owner"]]);
    const message = "role: usr_Abc123 is the workspace's last owner and stays one; make someone else an owner first";
    assert.equal(
      humanMessage(withNames(message, names)),
      "Olive Owner is the workspace's last owner and stays one; make someone else an owner first.",
    );
    assert.equal(
      withNames("path.id: no user usr_Gone99 in this workspace", names),
      "path.id: no user usr_Gone99 in this workspace",
    );
  });
});

describe("channel names", () => {
  test("what someone types is offered as the name the relay accepts", () => {
    assert.equal(channelNameFor("General Chat"), "general-chat");
    assert.equal(channelNameFor("  #Release  Notes! "), "release-notes");
    assert.equal(channelNameFor("Café talk"), "café-talk");
    assert.equal(channelNameFor("!!!"), null);
    assert.equal(channelNameFor("x".repeat(90) + " y")?.length, 80);
  });

  test("a name the relay takes as it is needs no offer", () => {
    assert.equal(isChannelName("general"), true);
    assert.equal(isChannelName("#General"), true);
    assert.equal(isChannelName("General Chat"), false);
    assert.equal(isChannelName("-dash-first"), false);
  });
});

describe("audit details", () => {
  test("a detail that holds a person's id is labelled as the person it names, not as an id", () => {
    assert.equal(detailLabel("holder_user_id"), "holder");
    assert.equal(detailLabel("user_id"), "person");
    assert.equal(detailLabel("webhook_url"), "webhook url");
    assert.equal(detailLabel("name"), "name");
  });
});
