"""Label one whole row in the real Label Studio form (Playwright) and count what it took.

Used by tests/test_annotate_form_speed.py and benchmarks/bench_form.py. The driver reads the project's label
config and uses what the form offers, the way an annotator who knows it would: a kind's hotkey where it has one
(else a click on the kind), a double-click on the person's name in the People line, a click on the new item in
the Regions list, its details (no click on a text box the form already put the cursor in), and a click on the
item again to close it. Checkboxes already in the wanted state are not clicked (a right draft costs nothing).

Counted: clicks (checkboxes, kinds, items, text boxes, submit), name selections (a double-click each), keys
(hotkeys; typed characters apart) and the form's height in pixels; the wall time of the
automated run is the browser's and the server's time (no human pauses) and is reported as such.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from typing import Any

from pipeline.annotate.config import ITEM_CONTROL, SUB_SEPARATOR
from pipeline.schema import AnnotationSchema


# Seconds from a kind to a name: no hand is faster. Label Studio 1.23 shows the new kind chosen at once, but a
# name given within a few milliseconds still became an item of the kind chosen before (on an idle machine, most
# kind changes of a row); after this pause it did not (tests/test_annotate_form_speed.py reports retries).
HAND_TRAVEL = 0.3


@dataclass
class Effort:
    clicks: int = 0
    selections: int = 0
    keys: int = 0
    typed: int = 0
    seconds: float = 0.0
    form_height: int = 0
    retries: int = 0  # an item the page made of another kind, undone and given again (the bench reports them)
    actions: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.pop("actions")
        return data


@dataclass(frozen=True)
class FormFeatures:
    hotkeys: dict[str, str]  # item kind -> its hotkey

    @classmethod
    def of(cls, config: str) -> FormFeatures:
        root = ET.fromstring(config)
        hotkeys = {label.get("value", ""): label.get("hotkey", "") for labels in root.iter("Labels")
                   if labels.get("name") == ITEM_CONTROL for label in labels.iter("Label") if label.get("hotkey")}
        return cls(hotkeys)


def select_word(page: Any, text_of_line: str, word: str) -> None:
    """Highlight `word` in the people strip as a double-click would (a DOM range, then mouseup)."""
    line = page.locator(".lsf-richtext__line", has_text=text_of_line)
    line.evaluate("""(el, word) => {
        // the line is split into spans once items highlight names: find the text node that holds the word
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        let node = walker.nextNode();
        while (node && node.textContent.indexOf(word) < 0) node = walker.nextNode();
        const start = node.textContent.indexOf(word);
        const range = document.createRange(); range.setStart(node, start); range.setEnd(node, start + word.length);
        const selection = window.getSelection(); selection.removeAllRanges(); selection.addRange(range);
        el.dispatchEvent(new MouseEvent('mouseup', {bubbles: true}));
    }""", word)


class FormDriver:
    def __init__(self, page: Any, schema: AnnotationSchema, config: str, entities: tuple[str, ...],
                 people_line: str, use_hotkeys: bool = True) -> None:
        self.page = page
        self.use_hotkeys = use_hotkeys  # False: each list kind is clicked, as on a form without hotkeys
        self.schema = schema
        self.features = FormFeatures.of(config)
        self.entities = entities
        self.people_line = people_line
        self.effort = Effort()

    # -- counted gestures -----------------------------------------------------------------------------------
    def click(self, locator: Any, what: str) -> None:
        locator.click()
        self.effort.clicks += 1
        self.effort.actions.append(f"click {what}")

    def set_checked(self, locator: Any, wanted: bool, what: str) -> None:
        if locator.is_checked() != wanted:
            self.click(locator, what)

    def key(self, key: str, what: str) -> None:
        self.page.keyboard.press(key)
        self.effort.keys += 1
        self.effort.actions.append(f"key {key} ({what})")

    def type_into(self, locator: Any, text: str, what: str) -> None:
        """Type into a box: a click first unless the form put the cursor there already (Label Studio focuses an
        opened item's first text box). Text is kept as typed (no Enter needed); leaving the box saves it."""
        if not locator.evaluate("el => el === document.activeElement"):
            self.click(locator, what)
        locator.fill(text)  # the characters an annotator types
        self.effort.typed += len(text)

    # -- the form -----------------------------------------------------------------------------------------------
    def choices(self, scope: str, options: tuple[str, ...], wanted: set[str], what: str) -> None:
        for option in options:
            self.set_checked(self.page.locator(f"{scope} input[name=\"{option}\"]").first, option in wanted,
                             f"{what} {option}")

    def scalar(self, name: str, value: Any) -> None:
        f = self.schema.field(name)
        scope = f"#field-{name}"
        if f.type in ("entity", "entities"):
            wanted = {value} if isinstance(value, str) else set(value)
            self.choices(scope, self.entities, wanted, name)
        elif f.type == "label":
            self.choices(scope, (value or "(none)",), {value or "(none)"}, name)
        elif f.type == "text":
            box = self.page.locator(f"[name={name}]")
            if box.input_value() != value:
                self.type_into(box, value, name)

    def item(self, name: str, item: dict[str, Any]) -> None:
        f = self.schema.field(name)
        anchor = next(sub for sub in f.items if sub.type == "entity")
        hotkey = self.features.hotkeys.get(name) if self.use_hotkeys else None
        in_a_box = self.page.evaluate("() => ['INPUT', 'TEXTAREA'].includes(document.activeElement.tagName)")
        kind = self.page.locator(".lsf-label", has=self.page.locator(".lsf-label__text", has_text=name)).first
        items, own = self.page.locator(".lsf-outliner-item__title"), \
            self.page.locator(".lsf-outliner-item__title", has_text=name)
        before, own_before = items.count(), own.count()
        if hotkey and not in_a_box:  # a key pressed in a text box types there: then the kind is clicked
            self.key(hotkey, f"kind {name}")
        else:
            self.click(kind, f"kind {name}")
        self.chosen(kind)
        select_word(self.page, self.people_line, item[anchor.name])
        self.effort.selections += 1
        self.effort.actions.append(f"select {item[anchor.name]}")
        self.made_as(name, kind, item[anchor.name], (items, before), (own, own_before))
        item_line = own.last
        self.click(item_line, f"open item {name}")
        for sub in (sub for sub in f.items if sub is not anchor):
            control = f"{name}{SUB_SEPARATOR}{sub.name}"
            value = item[sub.name]
            if sub.type in ("entity", "entities"):
                wanted = {value} if isinstance(value, str) else set(value)
                self.choices(f"#field-{name}", self.entities, wanted, control)
            elif sub.type == "label":
                self.choices(f"#field-{name}", (value,), {value}, control)
            else:
                box = self.page.locator(f"[name={control}]").last
                self.type_into(box, str(value), control)
        self.click(item_line, f"close item {name}")
        self.page.locator(f"#field-{name}").wait_for(state="hidden")  # closed: the next kind makes a new item

    def chosen(self, kind: Any) -> None:
        """Wait until the page shows the kind as the one chosen (an annotator sees it before reaching for a name;
        the driver, faster than any hand, would otherwise give the name while the page still has the kind
        before)."""
        selected = self.page.locator(".lsf-label_selected")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not (
                selected.count() == 1 and "lsf-label_selected" in (kind.get_attribute("class") or "").split()):
            time.sleep(0.05)
        time.sleep(HAND_TRAVEL)

    def made_as(self, name: str, kind: Any, person: str, items: tuple[Any, int], own: tuple[Any, int]) -> None:
        """Wait for the new item and check its kind. On an idle machine Label Studio now and then took the name
        before the kind's click (the item then got the kind chosen before): that item is undone (Ctrl+Z) and the
        kind and name are given again, counted as a retry, never as clicks or selections."""
        (all_items, before), (own_items, own_before) = items, own
        for _ in range(3):
            deadline = time.monotonic() + 10  # the item's title shows its kind a moment after the item appears
            while not (own_items.count() == own_before + 1 and all_items.count() == before + 1) \
                    and time.monotonic() < deadline:
                time.sleep(0.1)
            if own_items.count() == own_before + 1 and all_items.count() == before + 1:
                return
            self.effort.retries += 1
            self.effort.actions.append(f"retry {name} {person} (items {all_items.count() - before} new, "
                                       f"{own_items.count() - own_before} of the kind)")
            if all_items.count() > before:
                self.page.keyboard.press("Control+z")
                while all_items.count() > before and time.monotonic() < deadline:
                    time.sleep(0.1)
            time.sleep(0.5)  # let the page settle before the kind is given again
            kind.click()
            select_word(self.page, self.people_line, person)
        raise AssertionError(f"no {name} item for {person} after 3 tries: {self.effort.actions[-3:]}")

    def fill_row(self, values: dict[str, Any]) -> Effort:
        self.page.locator(".lsf-label").last.wait_for()  # list kinds render after the fields (before the clock)
        start = time.monotonic()
        # from the top of the form to the bottom of the list kinds: what an annotator scrolls through for a row
        self.effort.form_height = int(self.page.evaluate(
            """() => { const labels = document.querySelectorAll('.lsf-label'), last = labels[labels.length - 1];
                       let box = last.parentElement;
                       while (box && !(box.scrollHeight > box.clientHeight
                                       && getComputedStyle(box).overflowY !== 'visible')) box = box.parentElement;
                       box = box || document.scrollingElement;
                       return last.getBoundingClientRect().bottom - box.getBoundingClientRect().top
                              + box.scrollTop; }"""))
        for f in self.schema.fields:
            if f.annotated and f.type != "items" and f.name in values:
                self.scalar(f.name, values[f.name])
        for f in self.schema.fields:
            if f.annotated and f.type == "items":
                for item in values.get(f.name, ()):
                    self.item(f.name, item)
        with self.page.expect_response(lambda r: "/annotations" in r.url and r.request.method == "POST") as saved:
            self.click(self.page.get_by_role("button", name="Submit"), "submit")
        assert saved.value.ok, saved.value.status
        self.effort.seconds = round(time.monotonic() - start, 2)
        return self.effort
