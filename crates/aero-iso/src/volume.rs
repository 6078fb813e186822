//! Volume descriptors, path tables, directory extents and file data.

use std::collections::BTreeMap;

use crate::date::{dir_date, vd_date};
use crate::layout::Tree;
use crate::names::{d_chars, iso_name, joliet_field, joliet_name};
use crate::{IsoError, IsoOptions, SECTOR};

/// Which of the two trees is being written.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavor {
    Primary,
    Joliet,
}

impl Flavor {
    fn ident(self, name: &str, is_dir: bool) -> Vec<u8> {
        match self {
            Flavor::Primary => iso_name(name, is_dir).into_bytes(),
            Flavor::Joliet => joliet_name(name),
        }
    }
}

/// One entry of a directory extent.
struct Entry {
    ident: Vec<u8>,
    is_dir: bool,
    target: usize, // dir index or file index
}

fn entries(
    tree: &Tree,
    dir: usize,
    flavor: Flavor,
    file_ids: &BTreeMap<String, usize>,
) -> Result<Vec<Entry>, IsoError> {
    let d = &tree.dirs[dir];
    let mut v: Vec<Entry> = Vec::new();
    for &s in &d.subdirs {
        v.push(Entry {
            ident: flavor.ident(&tree.dirs[s].name, true),
            is_dir: true,
            target: s,
        });
    }
    for (name, path) in &d.files {
        v.push(Entry {
            ident: flavor.ident(name, false),
            is_dir: false,
            target: file_ids[path],
        });
    }
    v.sort_by(|a, b| a.ident.cmp(&b.ident));
    for w in v.windows(2) {
        if w[0].ident == w[1].ident {
            return Err(IsoError::IsoNameCollision(
                String::from_utf8_lossy(&w[0].ident).into_owned(),
            ));
        }
    }
    Ok(v)
}

fn record_len(ident_len: usize) -> usize {
    let n = 33 + ident_len;
    n + (n & 1)
}

/// Bytes of a directory extent, records never straddling a sector.
fn dir_size(idents: impl Iterator<Item = usize>) -> usize {
    let mut used = 0usize;
    for len in [1usize, 1].into_iter().chain(idents) {
        let r = record_len(len);
        if used % SECTOR + r > SECTOR {
            used = used.div_ceil(SECTOR) * SECTOR;
        }
        used += r;
    }
    used.div_ceil(SECTOR) * SECTOR
}

fn both16(v: u16) -> [u8; 4] {
    let l = v.to_le_bytes();
    let b = v.to_be_bytes();
    [l[0], l[1], b[0], b[1]]
}

fn both32(v: u32) -> [u8; 8] {
    let l = v.to_le_bytes();
    let b = v.to_be_bytes();
    [l[0], l[1], l[2], l[3], b[0], b[1], b[2], b[3]]
}

fn dir_record(extent: u32, size: u32, is_dir: bool, ident: &[u8], date: [u8; 7]) -> Vec<u8> {
    let mut r = vec![0u8; record_len(ident.len())];
    r[0] = r.len() as u8;
    r[2..10].copy_from_slice(&both32(extent));
    r[10..18].copy_from_slice(&both32(size));
    r[18..25].copy_from_slice(&date);
    r[25] = if is_dir { 2 } else { 0 };
    r[28..32].copy_from_slice(&both16(1));
    r[32] = ident.len() as u8;
    r[33..33 + ident.len()].copy_from_slice(ident);
    r
}

struct TreeLayout {
    order: Vec<usize>, // BFS order of dir indices
    number: Vec<u16>,  // dir index -> path table number (1-based)
    extent: Vec<u32>,  // dir index -> LBA
    size: Vec<u32>,    // dir index -> bytes
    entries: Vec<Vec<Entry>>,
    path_table: Vec<u8>, // L-type body (M-type derived)
}

fn plan(
    tree: &Tree,
    flavor: Flavor,
    file_ids: &BTreeMap<String, usize>,
) -> Result<TreeLayout, IsoError> {
    let key = |n: &str| flavor.ident(n, true);
    let order = tree.bfs(&key);
    let mut number = vec![0u16; tree.dirs.len()];
    for (i, &d) in order.iter().enumerate() {
        number[d] = u16::try_from(i + 1).map_err(|_| IsoError::TooLarge)?;
    }
    let mut ents = Vec::with_capacity(tree.dirs.len());
    let mut size = Vec::with_capacity(tree.dirs.len());
    for d in 0..tree.dirs.len() {
        let e = entries(tree, d, flavor, file_ids)?;
        size.push(
            u32::try_from(dir_size(e.iter().map(|x| x.ident.len())))
                .map_err(|_| IsoError::TooLarge)?,
        );
        ents.push(e);
    }
    Ok(TreeLayout {
        order,
        number,
        extent: vec![0; tree.dirs.len()],
        size,
        entries: ents,
        path_table: vec![],
    })
}

fn path_table(tree: &Tree, t: &TreeLayout, flavor: Flavor, big_endian: bool) -> Vec<u8> {
    let mut out = Vec::new();
    for &d in &t.order {
        let ident = if d == 0 {
            vec![0u8]
        } else {
            flavor.ident(&tree.dirs[d].name, true)
        };
        out.push(ident.len() as u8);
        out.push(0);
        let ext = t.extent[d];
        out.extend_from_slice(&if big_endian {
            ext.to_be_bytes()
        } else {
            ext.to_le_bytes()
        });
        let parent = t.number[tree.dirs[d].parent];
        out.extend_from_slice(&if big_endian {
            parent.to_be_bytes()
        } else {
            parent.to_le_bytes()
        });
        out.extend_from_slice(&ident);
        if ident.len() % 2 == 1 {
            out.push(0);
        }
    }
    out
}

fn sectors(bytes: usize) -> u32 {
    bytes.div_ceil(SECTOR) as u32
}

pub fn write_image(
    tree: &Tree,
    files: &BTreeMap<String, Vec<u8>>,
    opts: &IsoOptions,
) -> Result<Vec<u8>, IsoError> {
    let file_ids: BTreeMap<String, usize> = files
        .keys()
        .enumerate()
        .map(|(i, k)| (k.clone(), i))
        .collect();
    let file_data: Vec<&Vec<u8>> = files.values().collect();
    let mut prim = plan(tree, Flavor::Primary, &file_ids)?;
    let mut jol = plan(tree, Flavor::Joliet, &file_ids)?;

    // Path table sizes do not depend on extents, so compute them first.
    let pt_prim_len = path_table(tree, &prim, Flavor::Primary, false).len();
    let pt_jol_len = path_table(tree, &jol, Flavor::Joliet, false).len();
    let mut lba: u64 = 19;
    let pt_prim_l = lba as u32;
    lba += u64::from(sectors(pt_prim_len));
    let pt_prim_m = lba as u32;
    lba += u64::from(sectors(pt_prim_len));
    let pt_jol_l = lba as u32;
    lba += u64::from(sectors(pt_jol_len));
    let pt_jol_m = lba as u32;
    lba += u64::from(sectors(pt_jol_len));
    for t in [&mut prim, &mut jol] {
        for &d in &t.order.clone() {
            t.extent[d] = u32::try_from(lba).map_err(|_| IsoError::TooLarge)?;
            lba += u64::from(sectors(t.size[d] as usize));
        }
    }
    let mut file_lba = Vec::with_capacity(file_data.len());
    for data in &file_data {
        u32::try_from(data.len()).map_err(|_| IsoError::TooLarge)?;
        file_lba.push(if data.is_empty() {
            0
        } else {
            u32::try_from(lba).map_err(|_| IsoError::TooLarge)?
        });
        lba += u64::from(sectors(data.len()));
    }
    let total = u32::try_from(lba).map_err(|_| IsoError::TooLarge)?;
    prim.path_table = path_table(tree, &prim, Flavor::Primary, false);
    jol.path_table = path_table(tree, &jol, Flavor::Joliet, false);

    let mut img = vec![0u8; total as usize * SECTOR];
    let date7 = dir_date(opts.epoch);
    let put = |img: &mut Vec<u8>, lba: u32, bytes: &[u8]| {
        let off = lba as usize * SECTOR;
        img[off..off + bytes.len()].copy_from_slice(bytes);
    };

    for (t, flavor, pvd_lba, l, m) in [
        (&prim, Flavor::Primary, 16u32, pt_prim_l, pt_prim_m),
        (&jol, Flavor::Joliet, 17u32, pt_jol_l, pt_jol_m),
    ] {
        put(&mut img, l, &t.path_table);
        put(&mut img, m, &path_table(tree, t, flavor, true));
        // Directory extents.
        for d in 0..tree.dirs.len() {
            let mut ext = vec![0u8; t.size[d] as usize];
            let mut used = 0usize;
            let parent = tree.dirs[d].parent;
            let mut recs = vec![
                dir_record(t.extent[d], t.size[d], true, &[0], date7),
                dir_record(t.extent[parent], t.size[parent], true, &[1], date7),
            ];
            for e in &t.entries[d] {
                recs.push(if e.is_dir {
                    dir_record(t.extent[e.target], t.size[e.target], true, &e.ident, date7)
                } else {
                    dir_record(
                        file_lba[e.target],
                        file_data[e.target].len() as u32,
                        false,
                        &e.ident,
                        date7,
                    )
                });
            }
            for r in recs {
                if used % SECTOR + r.len() > SECTOR {
                    used = used.div_ceil(SECTOR) * SECTOR;
                }
                ext[used..used + r.len()].copy_from_slice(&r);
                used += r.len();
            }
            put(&mut img, t.extent[d], &ext);
        }
        // Volume descriptor.
        let mut vd = vec![0u8; SECTOR];
        vd[0] = if flavor == Flavor::Primary { 1 } else { 2 };
        vd[1..6].copy_from_slice(b"CD001");
        vd[6] = 1;
        let (sys, vol) = match flavor {
            Flavor::Primary => (d_chars("", 32), d_chars(&opts.volume_id, 32)),
            Flavor::Joliet => (joliet_field("", 32), joliet_field(&opts.volume_id, 32)),
        };
        vd[8..40].copy_from_slice(&sys);
        vd[40..72].copy_from_slice(&vol);
        vd[80..88].copy_from_slice(&both32(total));
        if flavor == Flavor::Joliet {
            vd[88..91].copy_from_slice(b"%/E"); // UCS-2 level 3
        }
        vd[120..124].copy_from_slice(&both16(1));
        vd[124..128].copy_from_slice(&both16(1));
        vd[128..132].copy_from_slice(&both16(SECTOR as u16));
        vd[132..140].copy_from_slice(&both32(t.path_table.len() as u32));
        vd[140..144].copy_from_slice(&l.to_le_bytes());
        vd[148..152].copy_from_slice(&m.to_be_bytes());
        let root = dir_record(t.extent[0], t.size[0], true, &[0], date7);
        vd[156..190].copy_from_slice(&root);
        let text = |s: &str, len: usize| match flavor {
            Flavor::Primary => {
                let mut v: Vec<u8> = s.bytes().take(len).collect();
                v.resize(len, b' ');
                v
            }
            Flavor::Joliet => joliet_field(s, len),
        };
        vd[190..318].copy_from_slice(&text("", 128)); // volume set
        vd[318..446].copy_from_slice(&text("AERO", 128)); // publisher
        vd[446..574].copy_from_slice(&text("AERO-ISO", 128)); // preparer
        vd[574..702].copy_from_slice(&text("AERO GUEST TOOLS", 128)); // application
        for range in [702..739, 739..776, 776..813] {
            let n = range.len();
            vd[range].copy_from_slice(&text("", n));
        }
        let date17 = vd_date(opts.epoch);
        vd[813..830].copy_from_slice(&date17);
        vd[830..847].copy_from_slice(&date17);
        vd[847..864].copy_from_slice(b"0000000000000000\0");
        vd[864..881].copy_from_slice(&date17);
        vd[881] = 1;
        put(&mut img, pvd_lba, &vd);
    }
    let mut term = vec![0u8; SECTOR];
    term[0] = 255;
    term[1..6].copy_from_slice(b"CD001");
    term[6] = 1;
    put(&mut img, 18, &term);
    for (i, data) in file_data.iter().enumerate() {
        if !data.is_empty() {
            put(&mut img, file_lba[i], data);
        }
    }
    Ok(img)
}
