//! Direct DOM building for the live displays (the tables, the replica
//! timeline, the charts, the job page's heading, tabs, actions and
//! overview, the log viewer) and the create-job form (its fields and
//! lists, `pages/new_job/field.rs` and `pages/new_job/list_editor.rs`).
//!
//! Those displays change every second and are mostly data, so they are
//! drawn here, outside Leptos's typed views: each typed view costs the
//! download kilobytes of generated code, while these few helpers are shared.
//! Text always goes in as text nodes or attribute values, never as markup.
//!
//! The one pattern (docs/architecture.md, "The pattern for a drawn part"):
//! a part is drawn into its host by `draw_into`; a part that takes input
//! keeps its state in a `Part`, whose one listener never drops an event.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::rc::Rc;

use leptos::prelude::{Effect, Get, NodeRef, StoredValue};
use wasm_bindgen::closure::Closure;
use wasm_bindgen::JsCast;
use web_sys::Element;

const SVG_NS: &str = "http://www.w3.org/2000/svg";

fn document() -> web_sys::Document {
    web_sys::window().and_then(|w| w.document()).expect("a document")
}

/// A new HTML element.
pub fn element(tag: &str) -> Element {
    document().create_element(tag).expect("a valid tag")
}

/// A new SVG element.
pub fn svg_element(tag: &str) -> Element {
    document().create_element_ns(Some(SVG_NS), tag).expect("a valid tag")
}

/// Sets an attribute.
pub fn set(element: &Element, name: &str, value: &str) {
    let _ = element.set_attribute(name, value);
}

/// Appends a new `tag` child with `class` and `text` (either may be empty)
/// and returns it.
pub fn child(parent: &Element, tag: &str, class: &str, text: &str) -> Element {
    let new = if parent.namespace_uri().as_deref() == Some(SVG_NS) { svg_element(tag) } else { element(tag) };
    if !class.is_empty() {
        set(&new, "class", class);
    }
    if !text.is_empty() {
        new.set_text_content(Some(text));
    }
    let _ = parent.append_child(&new);
    new
}

/// How a drawn part meets Leptos, the one way: `draw` runs once `host` is
/// in the document and again whenever a signal it read changes, and draws
/// the part's own state into the host (made on the first run, kept in the
/// closure). The closure is boxed so that every part shares this one
/// effect's code instead of instantiating Leptos's effect machinery for
/// its own closure type.
pub fn draw_into(host: NodeRef<leptos::html::Div>, mut draw: Box<dyn FnMut(&Element)>) {
    Effect::new(move |_| {
        if let Some(host) = host.get() {
            draw(&host.into());
        }
    });
}

/// The state of a drawn part that takes input: shared by the part's one
/// listener, its requests and its page, the one way.
///
/// - Every change goes through `change` (or `read`), never a borrow kept
///   across an `await`; each answers `None` once the part has `end`ed (its
///   page is gone), which is how a request that comes back late knows to
///   stop.
/// - The part's one listener comes from `listener`. Drawing can make the
///   browser fire an event while the state is being changed (a removed
///   element's focus leaves it: `blur`); that event waits and is handled
///   as soon as the change in progress is over, in the order events came.
///   No event is dropped.
pub struct Part<S>(Rc<Shared<S>>);

struct Shared<S> {
    /// `None` once the part has ended.
    state: RefCell<Option<S>>,
    /// Events that came while the state was in use, oldest first.
    waiting: RefCell<VecDeque<web_sys::Event>>,
    /// What the listener does with an event, once it is made.
    handle: Cell<Option<fn(&Part<S>, web_sys::Event)>>,
}

impl<S> Clone for Part<S> {
    fn clone(&self) -> Self {
        Part(self.0.clone())
    }
}

impl<S: 'static> Part<S> {
    pub fn new(state: S) -> Part<S> {
        Part(Rc::new(Shared { state: RefCell::new(Some(state)), waiting: Default::default(), handle: Cell::new(None) }))
    }

    /// Changes the state; then handles the events that came meanwhile.
    pub fn change<R>(&self, change: impl FnOnce(&mut S) -> R) -> Option<R> {
        let answer = change(self.0.state.borrow_mut().as_mut()?);
        self.handle_waiting();
        Some(answer)
    }

    /// Reads the state; then handles the events that came meanwhile.
    pub fn read<R>(&self, read: impl FnOnce(&S) -> R) -> Option<R> {
        let answer = read(self.0.state.borrow().as_ref()?);
        self.handle_waiting();
        Some(answer)
    }

    /// The part's listener: `handle` gets every event, one at a time. It
    /// holds the part weakly, so a listener left on an element does not
    /// keep the state alive.
    pub fn listener(&self, handle: fn(&Part<S>, web_sys::Event)) -> Closure<dyn Fn(web_sys::Event)> {
        self.0.handle.set(Some(handle));
        let part = Rc::downgrade(&self.0);
        Closure::new(move |event| {
            if let Some(part) = part.upgrade().map(Part) {
                part.0.waiting.borrow_mut().push_back(event);
                part.handle_waiting();
            }
        })
    }

    /// Ends the part: its state is dropped (with the elements and the
    /// listener it holds) and every later `change` or `read` answers `None`.
    /// Not from inside `change` or `read` (the state is in use there); an
    /// owner goes from Leptos's effects, which run after an event's
    /// handler.
    pub fn end(&self) {
        let state = self.0.state.borrow_mut().take();
        self.0.waiting.borrow_mut().clear();
        drop(state);
    }

    /// Ends the part when the reactive owner it is made under (its page or
    /// component) goes.
    pub fn end_with_owner(&self) {
        let part = self.clone();
        StoredValue::new_local(EndOnDrop(Some(Box::new(move || part.end()))));
    }

    /// Handles the waiting events unless the state is in use (then the
    /// change in progress handles them when it is over).
    fn handle_waiting(&self) {
        let Some(handle) = self.0.handle.get() else { return };
        while self.0.state.try_borrow_mut().is_ok() {
            let Some(event) = self.0.waiting.borrow_mut().pop_front() else { return };
            handle(self, event);
        }
    }
}

/// Runs its function when dropped: with the reactive owner it is stored
/// under. One type for every part, so the owner's storage is instantiated
/// once.
struct EndOnDrop(Option<Box<dyn FnOnce()>>);

impl Drop for EndOnDrop {
    fn drop(&mut self) {
        if let Some(end) = self.0.take() {
            end();
        }
    }
}

/// Shows or hides `element` (the `hidden` attribute).
pub fn show(element: &Element, shown: bool) {
    if shown {
        let _ = element.remove_attribute("hidden");
    } else {
        set(element, "hidden", "");
    }
}

/// Removes every child of `element`.
pub fn clear(element: &Element) {
    element.replace_children_with_node_0();
}

/// The closest element at or above an event's target that has `attribute`,
/// and that attribute's value: one listener on a container serves all its
/// children.
pub fn closest_attribute(event: &web_sys::Event, attribute: &str) -> Option<String> {
    let target: Element = event.target()?.dyn_into().ok()?;
    let found = target.closest(&format!("[{attribute}]")).ok()??;
    found.get_attribute(attribute)
}

/// Element children of one parent, kept in step with a keyed list: one
/// element per key, made by `create` the first time, refreshed by `update`
/// when its item changed, moved into order, removed when its key is gone.
/// An element whose item did not change is left alone, focus and all.
///
/// The keys are looked up in a list, not a hash map: a displayed list
/// mostly keeps its order from one update to the next (a table polled every
/// second, log rows that scroll by a few), so each key is found where the
/// last one was taken, and the console is spared a hash map per item type
/// (hashbrown and SipHash, about 3 KB of code on each page that has one).
pub struct Keyed<T> {
    keys: Vec<String>,
    live: Vec<Option<(Element, T)>>,
}

impl<T> Default for Keyed<T> {
    fn default() -> Self {
        Keyed { keys: Vec::new(), live: Vec::new() }
    }
}

impl<T: PartialEq + Clone> Keyed<T> {
    pub fn sync(
        &mut self,
        parent: &Element,
        items: &[(String, T)],
        create: impl Fn() -> Element,
        update: impl Fn(&Element, &T, Option<&T>),
    ) {
        let mut old_keys = std::mem::take(&mut self.keys);
        let mut old_live = std::mem::take(&mut self.live);
        let mut cursor = 0;
        for (index, (key, item)) in items.iter().enumerate() {
            let found = position(&old_keys, key, cursor).and_then(|at| {
                // Taken: a repeated key gets an element of its own.
                old_keys[at].clear();
                cursor = at + 1;
                old_live[at].take()
            });
            let (node, previous) = match found {
                Some((node, previous)) => (node, Some(previous)),
                None => (create(), None),
            };
            if previous.as_ref() != Some(item) {
                update(&node, item, previous.as_ref());
            }
            let here = parent.children().item(index as u32);
            if here.as_ref() != Some(&node) {
                let _ = parent.insert_before(&node, here.as_ref().map(|h| h.unchecked_ref()));
            }
            self.keys.push(key.clone());
            self.live.push(Some((node, item.clone())));
        }
        for (node, _) in old_live.into_iter().flatten() {
            node.remove();
        }
    }
}

/// Where `key` is among `keys`, looking from `from` on first, then before
/// it. An empty key is never found (taken keys are emptied).
fn position(keys: &[String], key: &str, from: usize) -> Option<usize> {
    if key.is_empty() {
        return None;
    }
    let from = from.min(keys.len());
    let (before, after) = keys.split_at(from);
    after.iter().position(|k| k == key).map(|at| at + from).or_else(|| before.iter().position(|k| k == key))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The parent's children as their text.
    fn texts(parent: &Element) -> Vec<String> {
        let children = parent.children();
        (0..children.length()).map(|i| children.item(i).unwrap().text_content().unwrap_or_default()).collect()
    }

    fn items(pairs: &[(&str, u32)]) -> Vec<(String, u32)> {
        pairs.iter().map(|(key, value)| (key.to_string(), *value)).collect()
    }

    /// What a part's listener saw, in order, and where.
    #[derive(Default)]
    struct Heard {
        events: Vec<String>,
    }

    fn hear(part: &Part<Heard>, event: web_sys::Event) {
        part.change(|heard| heard.events.push(event.type_()));
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn an_event_fired_while_a_part_changes_waits_for_the_change_and_is_not_lost() {
        let button = element("button");
        let part = Part::new(Heard::default());
        let listener = part.listener(hear);
        for kind in ["click", "blur"] {
            button.add_event_listener_with_callback(kind, listener.as_ref().unchecked_ref()).unwrap();
        }
        // The browser fires `blur` synchronously while the state is borrowed
        // (as drawing does when it removes a focused element).
        part.change(|heard| {
            button.dispatch_event(&web_sys::Event::new("blur").unwrap()).unwrap();
            heard.events.push("drawn".into());
        });
        assert_eq!(part.read(|heard| heard.events.clone()).unwrap(), ["drawn", "blur"]);
        button.dispatch_event(&web_sys::Event::new("click").unwrap()).unwrap();
        assert_eq!(part.read(|heard| heard.events.len()), Some(3));

        // Ended: nothing is read or changed any more, and the listener
        // left on the element does nothing.
        part.end();
        button.dispatch_event(&web_sys::Event::new("click").unwrap()).unwrap();
        assert!(part.read(|heard| heard.events.len()).is_none());
        assert!(part.change(|_| ()).is_none());
    }

    #[wasm_bindgen_test::wasm_bindgen_test]
    fn a_keyed_list_keeps_each_element_through_moves_and_changes() {
        let parent = element("ul");
        let mut keyed = Keyed::<u32>::default();
        let updates = std::cell::Cell::new(0);
        let sync = |keyed: &mut Keyed<u32>, list: &[(String, u32)]| {
            keyed.sync(
                &parent,
                list,
                || element("li"),
                |node, value, _| {
                    updates.set(updates.get() + 1);
                    node.set_text_content(Some(&value.to_string()));
                },
            )
        };
        sync(&mut keyed, &items(&[("a", 1), ("b", 2), ("c", 3)]));
        assert_eq!(texts(&parent), ["1", "2", "3"]);
        let b = parent.children().item(1).unwrap();

        // Reversed, one changed, one gone, one new: only the changed and
        // the new are drawn again, and `b` is the same element.
        updates.set(0);
        sync(&mut keyed, &items(&[("d", 4), ("b", 2), ("a", 10)]));
        assert_eq!(texts(&parent), ["4", "2", "10"]);
        assert_eq!(updates.get(), 2);
        assert_eq!(parent.children().item(1).unwrap(), b);

        // A repeated key gets an element of its own; nothing is left over.
        sync(&mut keyed, &items(&[("b", 2), ("b", 5)]));
        assert_eq!(texts(&parent), ["2", "5"]);
        sync(&mut keyed, &[]);
        assert_eq!(parent.children().length(), 0);
    }
}
