//! Enums whose values travel as fixed strings (database columns, wire
//! fields, event names), declared once with their strings.

/// A text that names no value of a [`string_enum!`] type.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown {what} {text:?}")]
pub struct UnknownValue {
    /// What was being read, for example `"plan id"`.
    pub what: &'static str,
    /// The text that was refused.
    pub text: String,
}

impl UnknownValue {
    #[must_use]
    pub fn new(what: &'static str, text: &str) -> Self {
        Self {
            what,
            text: text.to_owned(),
        }
    }
}

/// Declares a field-less enum with the string of each value and generates
/// `as_str`, `ALL` (every value in declaration order), `Display` (the
/// string) and `FromStr` (exactly the string; otherwise [`UnknownValue`]
/// naming what was read). The enum derives `Clone, Copy, Debug, PartialEq,
/// Eq, Hash`; attributes given before `enum` (documentation, more derives,
/// `serde` options) are kept. For serde through the same strings, add
/// [`string_enum_serde!`].
///
/// ```
/// sealpost_kernel::string_enum! {
///     /// How a door is.
///     #[derive(PartialOrd, Ord)]
///     pub enum Door: "door state" {
///         /// Shut.
///         Closed => "closed",
///         HalfOpen => "half_open",
///     }
/// }
///
/// assert_eq!(Door::HalfOpen.as_str(), "half_open");
/// assert_eq!(Door::ALL, [Door::Closed, Door::HalfOpen]);
/// assert_eq!("closed".parse::<Door>(), Ok(Door::Closed));
/// let error = "ajar".parse::<Door>().unwrap_err();
/// assert_eq!(error.to_string(), "unknown door state \"ajar\"");
/// ```
#[macro_export]
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        $vis:vis enum $name:ident : $what:literal {
            $( $(#[$variant_meta:meta])* $variant:ident => $text:literal ),+ $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        $vis enum $name {
            $( $(#[$variant_meta])* $variant ),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: [$name; [$(stringify!($variant)),+].len()] = [$($name::$variant),+];

            /// The value's string.
            #[must_use]
            pub fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $text),+
                }
            }
        }

        impl ::core::fmt::Display for $name {
            fn fmt(&self, f: &mut ::core::fmt::Formatter<'_>) -> ::core::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl ::core::str::FromStr for $name {
            type Err = $crate::UnknownValue;

            fn from_str(text: &str) -> ::core::result::Result<Self, Self::Err> {
                match text {
                    $($text => Ok($name::$variant),)+
                    _ => Err($crate::UnknownValue::new($what, text)),
                }
            }
        }
    };
}

/// Serialises a [`string_enum!`] type as its string and reads it back
/// through `FromStr` (an unknown string is a serde error naming it).
///
/// ```
/// sealpost_kernel::string_enum! {
///     pub enum Light: "light" { On => "on", Off => "off" }
/// }
/// sealpost_kernel::string_enum_serde!(Light);
///
/// assert_eq!(serde_json::to_string(&Light::On).unwrap(), r#""on""#);
/// assert_eq!(serde_json::from_str::<Light>(r#""off""#).unwrap(), Light::Off);
/// assert!(serde_json::from_str::<Light>(r#""dim""#).is_err());
/// ```
#[macro_export]
macro_rules! string_enum_serde {
    ($name:ident) => {
        impl $crate::__serde::Serialize for $name {
            fn serialize<S: $crate::__serde::Serializer>(
                &self,
                serializer: S,
            ) -> ::core::result::Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> $crate::__serde::Deserialize<'de> for $name {
            fn deserialize<D: $crate::__serde::Deserializer<'de>>(
                deserializer: D,
            ) -> ::core::result::Result<Self, D::Error> {
                let text = <::std::string::String as $crate::__serde::Deserialize>::deserialize(
                    deserializer,
                )?;
                text.parse()
                    .map_err(<D::Error as $crate::__serde::de::Error>::custom)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    crate::string_enum! {
        /// Three values, one with a string unlike its name.
        #[derive(PartialOrd, Ord)]
        enum Sample: "sample" {
            First => "first",
            /// Documented.
            SecondOne => "second.one",
            Third => "third value",
        }
    }
    crate::string_enum_serde!(Sample);

    #[test]
    fn round_trips_every_value() {
        assert_eq!(Sample::ALL.len(), 3);
        for value in Sample::ALL {
            assert_eq!(value.as_str().parse::<Sample>(), Ok(value));
            assert_eq!(value.to_string(), value.as_str());
            let json = serde_json::to_string(&value).unwrap();
            assert_eq!(json, format!("{:?}", value.as_str()));
            assert_eq!(serde_json::from_str::<Sample>(&json).unwrap(), value);
        }
        assert!(Sample::First < Sample::Third);
    }

    #[test]
    fn refuses_anything_else() {
        for text in ["", "First", "second", "third value ", "FIRST"] {
            assert_eq!(
                text.parse::<Sample>(),
                Err(crate::UnknownValue::new("sample", text))
            );
        }
        assert_eq!(
            "x".parse::<Sample>().unwrap_err().to_string(),
            "unknown sample \"x\""
        );
        let error = serde_json::from_str::<Sample>(r#""nope""#).unwrap_err();
        assert!(
            error.to_string().contains("unknown sample \"nope\""),
            "{error}"
        );
    }
}
