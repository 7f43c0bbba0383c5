//! Result tables (and the lower median their headline figures use): named columns of numbers, strings or categories, as every layer that
//! reports one builds them (transports, services, applications, the metrics layer) and
//! the front end converts them. At the bottom of the layers, beside units.rs, so that a
//! layer's table never imports the layers above it.

use crate::engine::{TimePs, PS_PER_US};

/// A column of a result table.
#[derive(Clone, Debug)]
pub enum Column {
    F64(Vec<f64>),
    I64(Vec<i64>),
    /// Narrow integers for columns with millions of rows (host ids, message sizes).
    I32(Vec<i32>),
    Str(Vec<String>),
    /// A categorical column: `levels[codes[i]]`. Per-request tables have tens of millions
    /// of rows and a handful of distinct strings; one byte per row instead of a string.
    Cat {
        levels: &'static [&'static str],
        codes: Vec<u8>,
    },
}

#[derive(Clone, Debug)]
pub struct Table {
    pub name: &'static str,
    pub columns: Vec<(&'static str, Column)>,
}

pub fn us(ps: TimePs) -> f64 {
    ps as f64 / PS_PER_US as f64
}

/// A column of integers, one per row.
pub fn ints<T>(rows: &[T], f: impl Fn(&T) -> i64) -> Column {
    Column::I64(rows.iter().map(f).collect())
}

/// A column of floats, one per row.
pub fn floats<T>(rows: &[T], f: impl Fn(&T) -> f64) -> Column {
    Column::F64(rows.iter().map(f).collect())
}

/// The lower median of `v` (sorted in place; None if empty): with an even count, the
/// smaller of the middle two, a value that occurred.
pub fn lower_median(v: &mut [f64]) -> Option<f64> {
    v.sort_by(f64::total_cmp);
    v.get(v.len().checked_sub(1)? / 2).copied()
}
