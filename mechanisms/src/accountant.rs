//! Privacy accountants (being written).
