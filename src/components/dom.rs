//! Direct DOM building for the live, read-only displays (the tables and the
//! replica timeline).
//!
//! Those displays change every second and are nothing but data, so they are
//! drawn here, outside Leptos's typed views: each typed view costs the
//! download kilobytes of generated code, while these few helpers are shared.
//! Text always goes in as text nodes or attribute values, never as markup.

use std::collections::HashMap;

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
pub struct Keyed<T> {
    live: HashMap<String, (Element, T)>,
}

impl<T> Default for Keyed<T> {
    fn default() -> Self {
        Keyed { live: HashMap::new() }
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
        let mut next = HashMap::with_capacity(items.len());
        for (index, (key, item)) in items.iter().enumerate() {
            let (node, previous) = match self.live.remove(key) {
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
            next.insert(key.clone(), (node, item.clone()));
        }
        for (_, (node, _)) in self.live.drain() {
            node.remove();
        }
        self.live = next;
    }
}
