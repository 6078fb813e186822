//! The directory tree implied by a set of file paths.

use std::collections::{BTreeMap, BTreeSet};

use crate::IsoError;

#[derive(Debug)]
pub struct Dir {
    /// Last path component ("" for the root).
    pub name: String,
    pub parent: usize,
    pub subdirs: Vec<usize>,
    /// (file name, full path) of the files directly inside.
    pub files: Vec<(String, String)>,
}

#[derive(Debug)]
pub struct Tree {
    /// Index 0 is the root.
    pub dirs: Vec<Dir>,
}

impl Tree {
    pub fn from_files(files: &BTreeMap<String, Vec<u8>>) -> Result<Self, IsoError> {
        let mut dir_paths = BTreeSet::new();
        for path in files.keys() {
            let mut prefix = String::new();
            let parts: Vec<&str> = path.split('/').collect();
            for p in &parts[..parts.len() - 1] {
                if !prefix.is_empty() {
                    prefix.push('/');
                }
                prefix.push_str(p);
                if files.contains_key(&prefix) {
                    return Err(IsoError::FileDirConflict(prefix));
                }
                dir_paths.insert(prefix.clone());
            }
        }
        let mut dirs = vec![Dir {
            name: String::new(),
            parent: 0,
            subdirs: vec![],
            files: vec![],
        }];
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        index.insert(String::new(), 0);
        // BTreeSet order puts every parent before its children.
        for p in &dir_paths {
            let (parent, name) = match p.rfind('/') {
                Some(i) => (&p[..i], &p[i + 1..]),
                None => ("", p.as_str()),
            };
            let parent_idx = index[parent];
            let idx = dirs.len();
            dirs.push(Dir {
                name: name.to_string(),
                parent: parent_idx,
                subdirs: vec![],
                files: vec![],
            });
            dirs[parent_idx].subdirs.push(idx);
            index.insert(p.clone(), idx);
        }
        for path in files.keys() {
            let (parent, name) = match path.rfind('/') {
                Some(i) => (&path[..i], &path[i + 1..]),
                None => ("", path.as_str()),
            };
            dirs[index[parent]]
                .files
                .push((name.to_string(), path.clone()));
        }
        Ok(Tree { dirs })
    }

    /// Breadth-first directory order (the path table order), children sorted by `key`.
    pub fn bfs(&self, key: &dyn Fn(&str) -> Vec<u8>) -> Vec<usize> {
        let mut order = vec![0];
        let mut i = 0;
        while i < order.len() {
            let mut kids = self.dirs[order[i]].subdirs.clone();
            kids.sort_by_key(|&k| key(&self.dirs[k].name));
            order.extend(kids);
            i += 1;
        }
        order
    }
}
