//! Columns that line up: each as wide as its widest cell, two spaces apart,
//! text aligned left and numbers right. Widths count characters, which is
//! right for the ASCII the tables mostly hold.

/// How a column's cells are aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table built row by row, rendered at the end.
#[derive(Debug)]
pub struct Table {
    aligns: Vec<Align>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with a header row; `columns` gives each header and alignment.
    pub fn new(columns: &[(&str, Align)]) -> Self {
        Self {
            aligns: columns.iter().map(|&(_, align)| align).collect(),
            rows: vec![columns.iter().map(|&(name, _)| name.to_owned()).collect()],
        }
    }

    /// A table without a header row.
    pub fn headless(aligns: &[Align]) -> Self {
        Self {
            aligns: aligns.to_vec(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; missing cells are empty, extra cells are dropped.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The lines, each without trailing spaces and ending in a newline.
    pub fn render(&self) -> String {
        let width = |cell: &String| cell.chars().count();
        let widths: Vec<usize> = (0..self.aligns.len())
            .map(|column| {
                self.rows
                    .iter()
                    .filter_map(|row| row.get(column))
                    .map(width)
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &self.rows {
            let mut line = String::new();
            for (column, (&align, &column_width)) in self.aligns.iter().zip(&widths).enumerate() {
                let cell = row.get(column).map_or("", String::as_str);
                let pad = " ".repeat(column_width.saturating_sub(cell.chars().count()));
                if column > 0 {
                    line.push_str("  ");
                }
                match align {
                    Align::Left => {
                        line.push_str(cell);
                        line.push_str(&pad);
                    }
                    Align::Right => {
                        line.push_str(&pad);
                        line.push_str(cell);
                    }
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up_whatever_the_cells() {
        let mut table = Table::new(&[
            ("PLAN", Align::Left),
            ("PRICE", Align::Right),
            ("NOTE", Align::Left),
        ]);
        table.row(vec!["free".into(), "free".into(), "".into()]);
        table.row(vec![
            "enterprise".into(),
            "by contract".into(),
            "ask".into(),
        ]);
        table.row(vec!["é".into(), "$1.00".into()]);
        assert_eq!(
            table.render(),
            "PLAN              PRICE  NOTE\n\
             free               free\n\
             enterprise  by contract  ask\n\
             é                 $1.00\n"
        );
    }

    #[test]
    fn a_headless_table_has_only_its_rows() {
        let mut table = Table::headless(&[Align::Left, Align::Left]);
        assert_eq!(table.render(), "");
        table.row(vec!["a".into(), "b".into()]);
        table.row(vec!["ccc".into(), "d".into()]);
        assert_eq!(table.render(), "a    b\nccc  d\n");
    }
}
