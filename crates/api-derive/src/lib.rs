//! `#[derive(Decode)]`: reads a contract type out of parsed JSON
//! (`jobdeck_api::decode`), following the type's own `#[serde(...)]`
//! attributes, so a wire name or a default is written once, on the type.
//!
//! Why not serde's `Deserialize` in the console: its derive reads a struct
//! with a `?` after every field, and every early return drops the fields
//! read so far; the job's decoders were 36 KB of the console's code. Here a
//! struct's reader is one call per field into a reader shared by every
//! field of that type, and a failed field records its error and goes on
//! (docs/measurements.md, "A decoder from the contract's attributes").
//!
//! Understood, as serde means them: on a struct `deny_unknown_fields`; on a
//! field `rename = "..."` and `default`; on an enum of unit variants
//! `rename_all = "lowercase"`; on a variant `rename = "..."` and `other`.
//! `skip_serializing_if` only concerns writing. Any other serde attribute
//! fails the build, so a rule this reader does not know cannot be ignored.
//!
//! A field's `#[cfg(...)]` is kept on its read, so a field a build leaves
//! out is not read there.

use proc_macro::TokenStream;
use proc_macro2::TokenStream as Tokens;
use quote::quote;
use syn::{parse_macro_input, Attribute, Data, DeriveInput, Fields, LitStr};

#[proc_macro_derive(Decode, attributes(serde))]
pub fn derive_decode(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    match decode_impl(&input) {
        Ok(tokens) => tokens.into(),
        Err(error) => error.to_compile_error().into(),
    }
}

/// The serde attributes this derive reads, of one item.
#[derive(Default)]
struct SerdeAttributes {
    rename: Option<String>,
    rename_all_lowercase: bool,
    default: bool,
    deny_unknown_fields: bool,
    other: bool,
}

fn serde_attributes(attributes: &[Attribute]) -> syn::Result<SerdeAttributes> {
    let mut found = SerdeAttributes::default();
    for attribute in attributes.iter().filter(|a| a.path().is_ident("serde")) {
        attribute.parse_nested_meta(|meta| {
            if meta.path.is_ident("rename") {
                found.rename = Some(meta.value()?.parse::<LitStr>()?.value());
            } else if meta.path.is_ident("rename_all") {
                let rule = meta.value()?.parse::<LitStr>()?;
                if rule.value() != "lowercase" {
                    return Err(syn::Error::new(rule.span(), "Decode knows only rename_all = \"lowercase\""));
                }
                found.rename_all_lowercase = true;
            } else if meta.path.is_ident("default") {
                if meta.input.peek(syn::Token![=]) {
                    return Err(meta.error("Decode knows only a plain `default` (the type's Default)"));
                }
                found.default = true;
            } else if meta.path.is_ident("deny_unknown_fields") {
                found.deny_unknown_fields = true;
            } else if meta.path.is_ident("other") {
                found.other = true;
            } else if meta.path.is_ident("skip_serializing_if") {
                meta.value()?.parse::<LitStr>()?;
            } else {
                return Err(meta.error("a serde attribute Decode does not know"));
            }
            Ok(())
        })?;
    }
    Ok(found)
}

fn decode_impl(input: &DeriveInput) -> syn::Result<Tokens> {
    let name = &input.ident;
    let attributes = serde_attributes(&input.attrs)?;
    let mut generics = input.generics.clone();
    for parameter in generics.type_params_mut() {
        parameter.bounds.push(syn::parse_quote!(::jobdeck_api::decode::Decode));
        parameter.bounds.push(syn::parse_quote!(::core::default::Default));
    }
    let (impl_generics, type_generics, where_clause) = generics.split_for_impl();
    let body = match &input.data {
        Data::Struct(data) => struct_body(name, &attributes, &data.fields)?,
        Data::Enum(data) => enum_body(name, &attributes, data)?,
        Data::Union(_) => return Err(syn::Error::new_spanned(input, "Decode reads structs and enums")),
    };
    Ok(quote! {
        impl #impl_generics ::jobdeck_api::decode::Decode for #name #type_generics #where_clause {
            fn decode<V: ::jobdeck_api::decode::JsonValue>(
                value: &V,
                checked: bool,
            ) -> ::core::result::Result<Self, ::jobdeck_api::decode::DecodeError> {
                #body
            }
        }
    })
}

/// A struct: one `Object::field` call per field, then `Object::close`.
fn struct_body(name: &syn::Ident, attributes: &SerdeAttributes, fields: &Fields) -> syn::Result<Tokens> {
    let Fields::Named(fields) = fields else {
        return Err(syn::Error::new_spanned(fields, "Decode reads structs with named fields"));
    };
    let mut wire_names = Vec::new();
    let mut reads = Vec::new();
    for field in &fields.named {
        let ident = field.ident.as_ref().expect("named fields have names");
        let field_attributes = serde_attributes(&field.attrs)?;
        let wire = field_attributes.rename.unwrap_or_else(|| ident.to_string().trim_start_matches("r#").to_string());
        let has_default = field_attributes.default;
        let cfgs = field.attrs.iter().filter(|a| a.path().is_ident("cfg"));
        reads.push(quote! { #(#cfgs)* #ident: object.field(#wire, #has_default) });
        wire_names.push(wire);
    }
    let what = format!("struct {name}");
    let deny = attributes.deny_unknown_fields;
    Ok(quote! {
        const FIELDS: &[&str] = &[#(#wire_names),*];
        let mut object = ::jobdeck_api::decode::Object::open(value, #what, FIELDS, #deny, checked)?;
        let read = #name { #(#reads,)* };
        object.close(read)
    })
}

/// An enum of unit variants: its wire name picks the variant; a name no
/// variant has is the `other` variant's, or an error.
fn enum_body(name: &syn::Ident, attributes: &SerdeAttributes, data: &syn::DataEnum) -> syn::Result<Tokens> {
    let mut wire_names = Vec::new();
    let mut variants = Vec::new();
    let mut other = None;
    for (index, variant) in data.variants.iter().enumerate() {
        if !matches!(variant.fields, Fields::Unit) {
            return Err(syn::Error::new_spanned(variant, "Decode reads enums of unit variants"));
        }
        let ident = &variant.ident;
        let variant_attributes = serde_attributes(&variant.attrs)?;
        let wire = match variant_attributes.rename {
            Some(rename) => rename,
            None if attributes.rename_all_lowercase => ident.to_string().to_lowercase(),
            None => ident.to_string(),
        };
        if variant_attributes.other {
            other = Some(index);
        }
        wire_names.push(wire);
        variants.push(ident);
    }
    // The last variant takes any index the names cannot give, so the match
    // needs no panic.
    let Some((last, firsts)) = variants.split_last() else {
        return Err(syn::Error::new_spanned(name, "Decode reads enums with variants"));
    };
    let indexes = 0..firsts.len();
    let what = format!("enum {name}");
    let other = match other {
        Some(index) => quote! { ::core::option::Option::Some(#index) },
        None => quote! { ::core::option::Option::None },
    };
    Ok(quote! {
        let _ = checked;
        const VARIANTS: &[&str] = &[#(#wire_names),*];
        ::core::result::Result::Ok(match ::jobdeck_api::decode::variant(value, #what, VARIANTS, #other)? {
            #(#indexes => #name::#firsts,)*
            _ => #name::#last,
        })
    })
}
