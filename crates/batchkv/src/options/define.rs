//! The macro that turns the option list (`options/list.rs`) into the
//! [`Options`](super::Options) struct and everything derived from it, so an
//! option is declared in exactly one place.
//!
//! A row of the list:
//!
//! ```text
//! /// Field documentation.
//! SCOPE NAME [| "ALIAS"]* : TYPE = DEFAULT, CODEC [=> table.FIELD];
//! ```
//!
//! - `SCOPE`: `db` (one value per database: a column family's options keep
//!   the database's) or `family` (each column family has its own).
//! - `NAME`: the field, the builder setter and the option-string name;
//!   `ALIAS`es are other names [`Options::set`](super::Options::set) accepts.
//! - `CODEC`: how the value is parsed and printed (`options/codec.rs`).
//! - `=> table.FIELD`: the option is also the SST layer's
//!   `TableOptions::FIELD` (`Options::table_options`).
//!
//! Rows in the `set in code { .. }` block are objects with no string form: the field is
//! `Option<TYPE>` (default `None`), the builder setter takes a `TYPE`, and
//! the `OPTIONS` file names them in a comment (`codec::Describe`).
//!
//! Generated: the struct with its documentation, `Default`, `Options::set`,
//! `Options::to_option_pairs`, `Options::table_options`,
//! `Options::with_database_wide_from` (a column family's view),
//! `Options::code_only_comments`, and one `OptionsBuilder` setter per option.

/// The sentence a field's documentation gets for its scope (`db` or
/// `family`; any other word is a compile error).
macro_rules! scope_doc {
    (db) => {
        "\n\n*Database-wide*: a column family's options keep the database's value."
    };
    (family) => {
        "\n\n*Per column family*: each family has its own value."
    };
}
pub(crate) use scope_doc;

/// `dst = src` (cloned) for a database-wide option, nothing for a
/// family's. (`Clone::clone(&src)` rather than `src.clone()`: most options
/// are `Copy`.)
macro_rules! copy_if_db {
    (db, $dst:expr, $src:expr) => {
        $dst = ::std::clone::Clone::clone(&$src)
    };
    (family, $dst:expr, $src:expr) => {};
}
pub(crate) use copy_if_db;

macro_rules! define_options {
    (
        $(#[$struct_meta:meta])*
        pub struct Options {
            $(
                $(#[$meta:meta])*
                $scope:ident $name:ident $(| $alias:literal)* : $ty:ty = $default:expr, $codec:ident
                $(=> table.$table_field:ident)?;
            )*
        }
        set in code {
            $(
                $(#[$code_meta:meta])*
                $code_scope:ident $code_name:ident : $code_ty:ty;
            )*
        }
    ) => {
        $(#[$struct_meta])*
        #[derive(Debug, Clone)]
        pub struct Options {
            $(
                $(#[$meta])*
                #[doc = $crate::options::define::scope_doc!($scope)]
                pub $name: $ty,
            )*
            $(
                $(#[$code_meta])*
                #[doc = $crate::options::define::scope_doc!($code_scope)]
                pub $code_name: Option<$code_ty>,
            )*
        }

        impl Default for Options {
            fn default() -> Self {
                Options {
                    $($name: $default,)*
                    $($code_name: None,)*
                }
            }
        }

        impl Options {
            /// Applies one `name=value` setting (the option-string syntax);
            /// an unknown name or a malformed value is `InvalidArgument`
            /// naming the option. Does not [`validate`](Options::validate).
            pub fn set(&mut self, name: &str, value: &str) -> $crate::error::Result<()> {
                match name {
                    $(
                        stringify!($name) $(| $alias)* => {
                            self.$name = <$crate::options::codec::$codec as $crate::options::codec::Codec<$ty>>::parse(name, value)?;
                        }
                    )*
                    _ => {
                        return Err($crate::error::Error::InvalidArgument(format!(
                            "unknown option {name:?}"
                        )))
                    }
                }
                Ok(())
            }

            /// Every option that has a string form, as `name=value` pairs in
            /// the form [`Options::set`] takes, in declaration order:
            /// `to_option_string().parse()` gives back equal options (except
            /// the objects set in code, which have none).
            pub fn to_option_pairs(&self) -> Vec<(&'static str, String)> {
                vec![
                    $((
                        stringify!($name),
                        <$crate::options::codec::$codec as $crate::options::codec::Codec<$ty>>::print(&self.$name),
                    ),)*
                ]
            }

            /// The options of the SST layer (table building and reading,
            /// table cache).
            pub(crate) fn table_options(&self) -> $crate::sst::TableOptions {
                $crate::sst::TableOptions {
                    $($($table_field: ::std::clone::Clone::clone(&self.$name),)?)*
                    ..$crate::sst::TableOptions::default()
                }
            }

            /// These options as a column family of a database opened with
            /// `db` uses them: database-wide options take `db`'s values.
            pub(crate) fn with_database_wide_from(mut self, db: &Options) -> Options {
                $($crate::options::define::copy_if_db!($scope, self.$name, db.$name);)*
                $($crate::options::define::copy_if_db!($code_scope, self.$code_name, db.$code_name);)*
                self
            }

            /// `name: description` of each object set in code, for the
            /// `OPTIONS` file's comments.
            pub(crate) fn code_only_comments(&self) -> Vec<String> {
                use $crate::options::codec::Describe as _;
                let mut lines = Vec::new();
                $(
                    if let Some(v) = &self.$code_name {
                        lines.push(format!("{}: {}", stringify!($code_name), v.describe()));
                    }
                )*
                lines
            }
        }

        impl $crate::options::OptionsBuilder {
            $(
                #[doc = concat!("[`Options::", stringify!($name), "`].")]
                pub fn $name(mut self, value: $ty) -> $crate::options::OptionsBuilder {
                    self.opts.$name = value;
                    self
                }
            )*
            $(
                #[doc = concat!("[`Options::", stringify!($code_name), "`].")]
                pub fn $code_name(mut self, value: $code_ty) -> $crate::options::OptionsBuilder {
                    self.opts.$code_name = Some(value);
                    self
                }
            )*
        }
    };
}
pub(crate) use define_options;
